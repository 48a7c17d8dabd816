import { performance } from 'node:perf_hooks';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * One registry per process (module scope): the rooms count without a handle passed down to them. Several servers
 * in one process (tests) share it, so tests read differences, never absolute values.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'agentsville_' });

const registers = [registry];
export const metrics = {
  turnsStarted: new Counter({
    name: 'agentsville_turns_started_total',
    help: 'Replies started (a start frame sent), by Provider.',
    labelNames: ['provider'] as const,
    registers,
  }),
  turnsFinished: new Counter({
    name: 'agentsville_turns_finished_total',
    help: 'Replies finished, by Provider and status (complete, truncated, stopped, failed, interrupted, error).',
    labelNames: ['provider', 'status'] as const,
    registers,
  }),
  startFrameSeconds: new Histogram({
    name: 'agentsville_start_frame_seconds',
    help: 'From the turn stream opening to a reply’s start frame, by Provider.',
    labelNames: ['provider'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers,
  }),
  tokensPerSecond: new Histogram({
    name: 'agentsville_output_tokens_per_second',
    help: 'Output tokens a second of a finished reply (start frame to finish), by Provider.',
    labelNames: ['provider'] as const,
    buckets: [1, 5, 10, 20, 40, 80, 160, 320],
    registers,
  }),
  providerErrors: new Counter({
    name: 'agentsville_provider_errors_total',
    help: 'Error frames of replies, by Provider and error code.',
    labelNames: ['provider', 'code'] as const,
    registers,
  }),
  activeStreams: new Gauge({
    name: 'agentsville_active_streams',
    help: 'Replies being written by this process now.',
    registers,
  }),
  publishOutcomes: new Counter({
    name: 'agentsville_publish_outcomes_total',
    help: 'Publication runs, by outcome (published, unpublished, paused, failed).',
    labelNames: ['outcome'] as const,
    registers,
  }),
  applyWrites: new Counter({
    name: 'agentsville_apply_writes_total',
    help: 'com.atproto.repo.applyWrites calls to PDSes, by outcome (ok, error).',
    labelNames: ['outcome'] as const,
    registers,
  }),
  indexerCursorAge: new Gauge({
    name: 'agentsville_indexer_cursor_age_seconds',
    help: 'How long ago the index last moved its cursor (Jetstream: the age of the last event indexed).',
    registers,
  }),
  indexerSkipped: new Counter({
    name: 'agentsville_indexer_records_skipped_total',
    help: 'Records the index refused (hostile, malformed or too large).',
    registers,
  }),
  labelsStored: new Counter({
    name: 'agentsville_labels_stored_total',
    help: 'Labels from followed labelers that verified and were stored.',
    registers,
  }),
  labelsRefused: new Counter({
    name: 'agentsville_labels_refused_total',
    help: 'Labels or frames from followed labelers refused, by reason (signature, shape, frame).',
    labelNames: ['reason'] as const,
    registers,
  }),
  refusals: new Counter({
    name: 'agentsville_refusals_total',
    help: 'Requests refused by a rate limit or a spending limit (HTTP 429), by error code.',
    labelNames: ['code'] as const,
    registers,
  }),
  sandboxSlotWaits: new Histogram({
    name: 'agentsville_sandbox_slot_wait_seconds',
    help: 'Time sandbox commands waited for a free slot (only those that waited).',
    buckets: [0.01, 0.1, 0.5, 1, 5, 15, 60],
    registers,
  }),
};

/** Counts one publication run's outcome: `run()` of publish/ calls it on each exit. */
export function publishOutcome(outcome: 'published' | 'unpublished' | 'paused' | 'failed'): void {
  metrics.publishOutcomes.inc({ outcome });
}

/** Times a wait for a sandbox slot. */

type MeteredFrame =
  | { type: 'start'; messageId: string; provider: string }
  | { type: 'finish'; messageId: string; status: string; usage: { outputTokens: number | null } | null }
  | { type: 'error'; messageId: string | null; code: string }
  | { type: 'part' };

/**
 * Watches one turn's frames as they go out: starts, finishes, errors, latency to each start frame and the
 * output rate of each reply. `end()` settles replies that never sent a finish (the stream broke).
 */
export function turnMeter(now = () => performance.now()) {
  const opened = now();
  const replies = new Map<string, { provider: string; at: number }>();
  let lastProvider = 'unknown';
  return {
    frame(frame: MeteredFrame) {
      if (frame.type === 'start') {
        const at = now();
        replies.set(frame.messageId, { provider: frame.provider, at });
        lastProvider = frame.provider;
        metrics.turnsStarted.inc({ provider: frame.provider });
        metrics.startFrameSeconds.observe({ provider: frame.provider }, (at - opened) / 1000);
        metrics.activeStreams.inc();
      } else if (frame.type === 'finish') {
        const reply = replies.get(frame.messageId);
        if (!reply) return;
        replies.delete(frame.messageId);
        metrics.activeStreams.dec();
        metrics.turnsFinished.inc({ provider: reply.provider, status: frame.status });
        const seconds = (now() - reply.at) / 1000;
        const tokens = frame.usage?.outputTokens ?? 0;
        if (tokens > 0 && seconds > 0)
          metrics.tokensPerSecond.observe({ provider: reply.provider }, tokens / seconds);
      } else if (frame.type === 'error') {
        const reply = frame.messageId ? replies.get(frame.messageId) : undefined;
        metrics.providerErrors.inc({ provider: reply?.provider ?? lastProvider, code: frame.code });
      }
    },
    end() {
      for (const reply of replies.values()) {
        metrics.activeStreams.dec();
        metrics.turnsFinished.inc({ provider: reply.provider, status: 'error' });
      }
      replies.clear();
    },
  };
}
