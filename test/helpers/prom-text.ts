/** One sample of the Prometheus text exposition format. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromFamily {
  name: string;
  type: string;
  help: string;
  samples: PromSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count', ''], counter: [''], gauge: [''], untyped: [''] };

/**
 * A strict parser of the text format (version 0.0.4): every sample belongs to a family declared
 * by `# TYPE` before it, names and label names are valid, label values are properly escaped,
 * values are floats, and no series appears twice. Throws naming the line on anything else.
 */
export function parsePrometheusText(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>();
  const seen = new Set<string>();
  let current: PromFamily | undefined;
  if (!text.endsWith('\n')) throw new Error('exposition does not end with a newline');
  text
    .slice(0, -1)
    .split('\n')
    .forEach((line, i) => {
      const at = `line ${i + 1}: ${line.slice(0, 120)}`;
      if (line === '') return;
      const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (meta) {
        const [, kind, name, rest] = meta as unknown as [string, string, string, string];
        if (!NAME.test(name)) throw new Error(`bad metric name, ${at}`);
        const family = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] };
        if (kind === 'TYPE') {
          if (!(rest in SUFFIXES)) throw new Error(`unknown type, ${at}`);
          if (family.samples.length > 0) throw new Error(`TYPE after samples, ${at}`);
          family.type = rest;
        } else family.help = rest;
        families.set(name, family);
        current = family;
        return;
      }
      if (line.startsWith('#')) return;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
      if (!m) throw new Error(`not a sample, ${at}`);
      const [, name, rawLabels, rawValue] = m as unknown as [string, string, string | undefined, string];
      if (!current || !SUFFIXES[current.type]!.some((s) => `${current!.name}${s}` === name)) throw new Error(`sample outside its family, ${at}`);
      const labels = parseLabels(rawLabels ?? '', at);
      // Prometheus reads values with Go's ParseFloat, which takes NaN in any case; prom-client
      // writes `Nan` (the event-loop lag mean before its first sample).
      const notANumber = /^nan$/i.test(rawValue);
      const value = rawValue === '+Inf' ? Number.POSITIVE_INFINITY : rawValue === '-Inf' ? Number.NEGATIVE_INFINITY : notANumber ? Number.NaN : Number(rawValue);
      if (Number.isNaN(value) && !notANumber) throw new Error(`bad value, ${at}`);
      const key = `${name}{${Object.entries(labels)
        .sort()
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}}`;
      if (seen.has(key)) throw new Error(`duplicate series, ${at}`);
      seen.add(key);
      current.samples.push({ name, labels, value });
    });
  return families;
}

function parseLabels(raw: string, at: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = raw;
  while (rest.length > 0) {
    const m = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,?)/.exec(rest);
    if (!m) throw new Error(`bad labels, ${at}`);
    const [whole, key, value, comma] = m as unknown as [string, string, string, string];
    if (key in labels) throw new Error(`label twice, ${at}`);
    labels[key] = value.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    rest = rest.slice(whole.length);
    if (!comma && rest.length > 0) throw new Error(`bad labels, ${at}`);
  }
  return labels;
}

/** The value of one series (0 when absent), e.g. `value(f, 'indexbot_events_total', { type: 'rebalance.announced' })`. */
export function sampleValue(families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): number {
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return 0;
}
