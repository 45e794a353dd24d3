/** Types of kustomize-tool.mjs, for the deploy tests. */
export interface KustomizeTool {
  readonly path: string
  /** kustomize's version, `v5.5.0`; undefined when it did not say (kubectl 1.20). */
  readonly version: string | undefined
  /** The argv that renders the kustomization in `dir` to stdout. */
  build(dir: string): string[]
  readonly label: string
}
export declare const MIN_KUSTOMIZE_MAJOR: number
export declare const MIN_KUBECTL_MINOR: number
export declare function onPath(program: string, env?: NodeJS.ProcessEnv): string | undefined
export declare function findKustomize(env?: NodeJS.ProcessEnv): KustomizeTool | { readonly problem: string }
export declare function debianKubectlCandidate(): [number, number] | undefined
