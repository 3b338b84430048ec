/**
 * vega and vega-lite, needed only for the bench charts. Where they are not installed the bench
 * skips its charts rather than failing; only "this package is not installed" is treated so, and
 * any other failure to load them is a real error.
 */

/** The chart packages and the exact versions package.json pins (a test keeps them equal). */
export const CHART_PACKAGES = { vega: '6.4.0', 'vega-lite': '6.5.0' } as const;
type ChartPackage = keyof typeof CHART_PACKAGES;

/** The command that adds the chart packages to a project that left them out. */
export const CHART_INSTALL_COMMAND = `npm install ${Object.entries(CHART_PACKAGES)
  .map(([name, version]) => `${name}@${version}`)
  .join(' ')}`;

// The few members charts.ts uses, declared here rather than taken from the packages' types, so
// that no declaration this package emits refers to packages a consumer may not have installed.
interface VegaView {
  toSVG(): Promise<string>;
  finalize(): void;
}
export interface ChartLibraries {
  readonly vega: {
    parse(spec: unknown): unknown;
    View: new (runtime: unknown, options: { renderer: 'none' }) => VegaView;
  };
  readonly vegaLite: { compile(spec: object): { spec: unknown } };
}

/** Imports a package by name; the seam tests replace. */
export type ImportPackage = (name: ChartPackage) => Promise<unknown>;

// A non-literal specifier: tsc does not look for the package's types, so it need not be there.
const importPackage: ImportPackage = (name) => import(name);

/**
 * True when `err` says that the package `name` itself cannot be found. Node gives no field for
 * which module was missing, only the message; a package that IS installed but misses one of its
 * own dependencies names that dependency instead, and is not mistaken for an omitted install.
 */
function isNotInstalled(err: unknown, name: string): boolean {
  return (
    (err as NodeJS.ErrnoException | null)?.code === 'ERR_MODULE_NOT_FOUND' &&
    String((err as Error).message).startsWith(`Cannot find package '${name}' `)
  );
}

/** vega and vega-lite, or undefined when either is not installed; rejects on any other failure. */
export async function loadChartLibraries(
  load: ImportPackage = importPackage,
): Promise<ChartLibraries | undefined> {
  const one = async (name: ChartPackage): Promise<unknown> => {
    try {
      return await load(name);
    } catch (err) {
      if (isNotInstalled(err, name)) return undefined;
      throw err;
    }
  };
  const [vega, vegaLite] = await Promise.all([one('vega'), one('vega-lite')]);
  if (vega === undefined || vegaLite === undefined) return undefined;
  return { vega, vegaLite } as ChartLibraries;
}
