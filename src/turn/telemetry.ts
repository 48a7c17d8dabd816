import type { TelemetryOptions } from 'ai';

/**
 * The AI SDK's OpenTelemetry spans for one kind of Provider call, when the instance turned them on
 * (OTEL_TELEMETRY): timings, token counts and Model ids. What was said stays out of the spans (inputs and outputs
 * are not recorded), as it stays out of the logs: a span exporter is one more place text would leak to.
 */
export function telemetryFor(enabled: boolean | undefined, functionId: string): TelemetryOptions | undefined {
  return enabled ? { isEnabled: true, functionId, recordInputs: false, recordOutputs: false } : undefined;
}
