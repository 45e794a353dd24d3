/**
 * One client process of bench:queued: opens COUNT connections to URL, sends one batch chat
 * completion on each and keeps it open (the gateway queues it), counting the answers that
 * come back by status and reject reason. Prints a JSON line with its counts every second
 * and at SIGTERM. Raw sockets, so 5,000 cost a few MB here.
 *
 *   tsx bench/queued-client.ts URL COUNT
 */
import { connect } from 'node:net'

const [url = '', countArg = '0'] = process.argv.slice(2)
const { hostname, port } = new URL(url)
const count = Number(countArg)
const body = JSON.stringify({
  model: 'meta-llama/Llama-3.1-8B-Instruct',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'a request that waits in the batch queue' }],
})
const req = `POST /v1/chat/completions HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nX-Priority: batch\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
let connected = 0
let errors = 0
const answers: Record<string, number> = {}
const report = () => process.stdout.write(`${JSON.stringify({ connected, errors, answers })}\n`)
let opened = 0
const openSome = () => {
  // a hundred at a time, so the accept queue keeps up
  for (let i = 0; i < 100 && opened < count; i++, opened++) {
    const s = connect({ host: hostname, port: Number(port) }, () => {
      connected++
      s.write(req)
    })
    let head = ''
    s.on('data', (c: Buffer) => {
      if (head.includes('\r\n\r\n')) return
      head += c.toString()
      if (!head.includes('\r\n\r\n')) return
      const status = head.split(' ')[1] ?? '?'
      const reason = /x-gateway-reject-reason: (\S+)/i.exec(head)?.[1]
      const k = reason === undefined ? status : `${status} ${reason}`
      answers[k] = (answers[k] ?? 0) + 1
    })
    s.on('error', () => {
      errors++
    })
  }
  if (opened < count) setTimeout(openSome, 100)
}
openSome()
setInterval(report, 1_000)
process.on('SIGTERM', () => {
  report()
  process.exit(0)
})
