// metrics/: the instance's Prometheus metrics (prom-client, a registry of our own, never the global default):
// what each room counts, and /metrics behind a bearer token (METRICS_TOKEN; not served without one). ADR 0056.

export { metrics, publishOutcome, registry, turnMeter } from './registry.ts';
export { countRefusals, metricsRoute } from './route.ts';
