/**
 * A strict reader of the Prometheus text exposition format (0.0.4): every line is a HELP or TYPE comment or a
 * sample `name{label="value",…} value [timestamp]`; anything else fails. Samples by series name with labels.
 */
const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = `[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"`;
const VALUE = '(?:[+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][+-]?\\d+)?|[+-]?Inf|NaN)';
const SAMPLE = new RegExp(`^(${NAME})(\\{(?:${LABEL}(?:,${LABEL})*,?)?\\})? (${VALUE})(?: -?\\d+)?$`);
const HELP = new RegExp(`^# HELP ${NAME} .*$`);
const TYPE = new RegExp(`^# TYPE ${NAME} (counter|gauge|histogram|summary|untyped)$`);

export function parsePrometheus(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || HELP.test(line) || TYPE.test(line)) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not in the Prometheus text format: ${line}`);
    const value = m[3]!.replace(/^\+?Inf$/, 'Infinity').replace(/^-Inf$/, '-Infinity');
    samples.set(`${m[1]}${m[2] ?? ''}`, Number(value));
  }
  return samples;
}
