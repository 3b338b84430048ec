/**
 * The benchmark's charts: vega-lite specs compiled to vega and rendered to SVG in Node by
 * vega's own SVG renderer (no canvas, no browser). vega and vega-lite are optional
 * dependencies, loaded only when charts are drawn (see chart-libraries.ts).
 */
import type { TopLevelSpec } from 'vega-lite';
import { figures } from './bench-report.js';
import type { BenchResult } from './bench-run.js';
import type { ChartLibraries } from './chart-libraries.js';
import type { PhaseResult } from './phase-recorder.js';

/**
 * vega-lite's own spec type: vega-lite is a devDependency, so every build of this package has
 * it, while the published code imports it only at run time (chart-libraries.ts).
 */
export type ChartSpec = TopLevelSpec;

export interface Chart {
  /** File name under the output folder. */
  readonly file: string;
  readonly spec: ChartSpec;
}

const SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';
const MODE_COLOR = {
  field: 'mode',
  type: 'nominal',
  title: 'mode',
  scale: { domain: ['unbounded', 'bounded'] },
} as const;
const OFFERED_X = { field: 'offered', type: 'quantitative', title: 'offered load (requests/s)' } as const;

/** p50 / p99 / p99.9 of completed requests against offered load, one line per mode and percentile. */
export function latencySpec(r: BenchResult): ChartSpec {
  // A phase that completed nothing has no latency (null): no point, rather than one at 0 ms.
  const values = r.phases.flatMap((p) =>
    (
      [
        ['p50', p.latencyMs.p50],
        ['p99', p.latencyMs.p99],
        ['p99.9', p.latencyMs.p999],
      ] as const
    ).flatMap(([percentile, ms]) =>
      ms === null
        ? []
        : [{ offered: p.offeredRate, mode: p.mode, percentile, latencyMs: Math.max(0.001, ms) }],
    ),
  );
  return {
    $schema: SCHEMA,
    title: {
      text: 'Latency vs offered load',
      subtitle: `completed requests; deadline ${r.deadlineMs} ms; backend ${r.backend}`,
    },
    width: 480,
    height: 300,
    layer: [
      {
        data: { values },
        mark: { type: 'line', point: true },
        encoding: {
          x: OFFERED_X,
          y: { field: 'latencyMs', type: 'quantitative', title: 'latency (ms, log)', scale: { type: 'log' } },
          color: MODE_COLOR,
          strokeDash: {
            field: 'percentile',
            type: 'nominal',
            title: 'percentile',
            scale: { domain: ['p50', 'p99', 'p99.9'] },
          },
          detail: { field: 'percentile' },
        },
      },
      {
        data: { values: [{ y: r.deadlineMs, label: 'deadline' }] },
        layer: [
          {
            mark: { type: 'rule', color: 'gray', strokeDash: [2, 2] },
            encoding: { y: { field: 'y', type: 'quantitative' } },
          },
          {
            mark: { type: 'text', align: 'left', dx: 4, dy: -6, color: 'gray' },
            encoding: { y: { field: 'y', type: 'quantitative' }, x: { value: 0 }, text: { field: 'label' } },
          },
        ],
      },
    ],
  };
}

/** Completions per second against offered load; the dashed diagonal is "achieved = offered". */
export function throughputSpec(r: BenchResult): ChartSpec {
  const values = r.phases.map((p) => ({ offered: p.offeredRate, achieved: p.achievedRate, mode: p.mode }));
  // To the highest offered load and no further: a floor of 1/s stretched a slow layer's axes.
  const top = Math.max(0, ...r.rates);
  return {
    $schema: SCHEMA,
    title: {
      text: 'Throughput vs offered load',
      subtitle: `calibrated capacity ${figures(r.calibration.capacity)} req/s`,
    },
    width: 480,
    height: 300,
    layer: [
      {
        data: {
          values: [
            { offered: 0, achieved: 0 },
            { offered: top, achieved: top },
          ],
        },
        mark: { type: 'line', color: 'lightgray', strokeDash: [4, 4] },
        encoding: { x: OFFERED_X, y: { field: 'achieved', type: 'quantitative' } },
      },
      {
        data: { values },
        mark: { type: 'line', point: true },
        encoding: {
          x: OFFERED_X,
          y: { field: 'achieved', type: 'quantitative', title: 'achieved (completed requests/s)' },
          color: MODE_COLOR,
        },
      },
    ],
  };
}

function timelineValues(phases: readonly PhaseResult[]) {
  return phases.flatMap((p) =>
    p.timeline.flatMap((s) => [
      { t: s.t / 1000, mode: p.mode, depth: s.depth, outcome: 'refused', count: s.refused },
      { t: s.t / 1000, mode: p.mode, depth: s.depth, outcome: 'deadline missed', count: s.deadline },
    ]),
  );
}

/** Depth and cumulative refusals / deadline misses over time at the highest offered load. */
export function timelineSpec(r: BenchResult): ChartSpec {
  const top = Math.max(...r.phases.map((p) => p.offeredRate));
  const phases = r.phases.filter((p) => p.offeredRate === top);
  const label = phases[0]?.rateLabel ?? '';
  const x = { field: 't', type: 'quantitative', title: 'seconds since the phase began' } as const;
  return {
    $schema: SCHEMA,
    title: {
      text: `Depth and refusals over time at ${figures(top)} req/s (${label})`,
      subtitle: `arrivals stop at ${figures(r.phaseS)} s, then the phase drains`,
    },
    data: { values: timelineValues(phases) },
    vconcat: [
      {
        width: 480,
        height: 200,
        transform: [{ filter: "datum.outcome === 'refused'" }],
        mark: { type: 'line' },
        encoding: {
          x,
          y: { field: 'depth', type: 'quantitative', title: 'depth (outstanding calls)' },
          color: MODE_COLOR,
        },
      },
      {
        width: 480,
        height: 200,
        mark: { type: 'line' },
        encoding: {
          x,
          y: { field: 'count', type: 'quantitative', title: 'cumulative requests' },
          color: MODE_COLOR,
          strokeDash: {
            field: 'outcome',
            type: 'nominal',
            title: 'outcome',
            scale: { domain: ['refused', 'deadline missed'] },
          },
        },
      },
    ],
  };
}

/** The chart files `charts()` makes, known before the run so the output folder can be checked. */
export const CHART_FILES = ['latency.svg', 'throughput.svg', 'timeline.svg'] as const;

export function charts(r: BenchResult): Chart[] {
  const [latency, throughput, timeline] = CHART_FILES;
  return [
    { file: latency, spec: latencySpec(r) },
    { file: throughput, spec: throughputSpec(r) },
    { file: timeline, spec: timelineSpec(r) },
  ];
}

/** vega-lite -> vega -> SVG, headless: the 'none' renderer draws nothing but still lays out. */
export async function renderSvg(spec: ChartSpec, { vega, vegaLite }: ChartLibraries): Promise<string> {
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
