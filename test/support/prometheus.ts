import parsePrometheusTextFormat, { type ParsedFamily, type ParsedSample } from 'parse-prometheus-text-format';

/*
 * Reading a `GET /metrics` answer as a Prometheus server would: with an independent parser of the
 * text format (parse-prometheus-text-format), never with the library that wrote it.
 */

export interface Scrape {
  readonly status: number;
  readonly contentType: string | null;
  readonly body: string;
}

/** `GET /metrics` over loopback, with the capability as a Bearer token (none: no header). */
export async function scrape(url: string, token?: string, signal?: AbortSignal): Promise<Scrape> {
  const response = await fetch(`${url}/metrics`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, ...(signal === undefined ? {} : { signal }) });
  return { status: response.status, contentType: response.headers.get('content-type'), body: await response.text() };
}

export function parseScrape(body: string): Map<string, ParsedFamily> {
  return new Map(parsePrometheusTextFormat(body).map((family) => [family.name, family]));
}

function family(families: Map<string, ParsedFamily>, name: string): ParsedFamily {
  const found = families.get(name);
  if (found === undefined) throw new Error(`no metric ${name} in the scrape`);
  return found;
}

/** The metric's type as the scrape declares it. */
export const typeOf = (families: Map<string, ParsedFamily>, name: string) => family(families, name).type;

/** Every sample of a metric as `{labels as k=v joined by ",": value}`, for whole-metric comparisons. */
export function samples(families: Map<string, ParsedFamily>, name: string): Record<string, number> {
  return Object.fromEntries(
    family(families, name).metrics.map((sample) => [labelKey(sample), Number(sample.value)]),
  );
}

/**
 * A histogram's `_count` samples by labels. The parser folds a histogram family into one sample
 * and drops its labels (it was written for unlabelled ones), so the family's HELP and TYPE lines
 * are taken out first: each `_bucket`, `_sum` and `_count` line then parses as an untyped sample
 * with its labels, as a Prometheus server stores them.
 */
export function histogramCounts(body: string, name: string): Record<string, number> {
  const untyped = body
    .split('\n')
    .filter((line) => !line.startsWith(`# TYPE ${name} `) && !line.startsWith(`# HELP ${name} `))
    .join('\n');
  const counts = parsePrometheusTextFormat(untyped).filter((entry) => entry.name === `${name}_count`);
  return Object.fromEntries(counts.flatMap((entry) => entry.metrics.map((sample) => [labelKey(sample), Number(sample.value)])));
}

function labelKey(sample: Pick<ParsedSample, 'labels'>): string {
  return Object.entries(sample.labels ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}
