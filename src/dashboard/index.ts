export {
  DASHBOARD_DATA_VERSION,
  type DashboardBackend,
  type DashboardClass,
  type DashboardData,
  type DashboardSources,
  dashboardData,
} from './data.js'
export { DASHBOARD_PUBLIC_PATHS, type DashboardRoutes, registerDashboard } from './routes.js'
