/**
 * Decimal notation only: Number() would also take '0x10', '0b11' and '' (as 16, 3 and 0). The
 * point, where there is one, is matched with the digits after it, never alone: an optional point
 * between two runs of digits let the regex try every split of a long run that fails at its end,
 * quadratic in its length (an x-omni-deadline-ms of 16,000 digits and a letter held the server's
 * event loop for seconds).
 */
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;

/** Whether `text` (trimmed) is a number written in decimal: what the CLI and HTTP front accept. */
export function isDecimal(text: string): boolean {
  return DECIMAL.test(text.trim());
}

const PARTS = /^[+-]?(\d*)\.?(\d*)(?:e([+-]?\d+))?$/i;

/**
 * Whether decimal `text` names a whole number exactly. Number() rounds to a double, so
 * '1.0000000000000001' would read as 1 and '1e-400' as 0: the digits are read instead, and
 * every one the exponent leaves after the point must be 0 ('2.50e1' and '1e3' are whole).
 */
export function isWholeDecimal(text: string): boolean {
  const trimmed = text.trim();
  const parts = isDecimal(trimmed) ? PARTS.exec(trimmed) : null;
  if (parts === null) return false;
  const [, whole = '', fraction = '', exponent = '0'] = parts;
  const point = whole.length + Number(exponent);
  return /^0*$/.test((whole + fraction).slice(Math.max(0, point)));
}

/**
 * The number decimal `text` names (else undefined): the one reading of every number the command
 * line and the HTTP front take. Number() reads text too small for a double ('1e-400', '-1e-400')
 * as 0, which is not what it names: here it is the nearest double on its side of 0,
 * Number.MIN_VALUE or -Number.MIN_VALUE, so that a range check sees it above 0 (or below); a
 * zero ('-0' too) is 0; text too large is +-Infinity.
 */
export function decimalValue(text: string): number | undefined {
  if (!isDecimal(text)) return undefined;
  const value = Number(text);
  if (value !== 0) return value;
  const mantissa = text.trim().split(/e/i)[0]!;
  if (!/[1-9]/.test(mantissa)) return 0;
  return mantissa.startsWith('-') ? -Number.MIN_VALUE : Number.MIN_VALUE;
}

/**
 * The number decimal `text` names, where it is > 0 (else undefined): the one reading of a
 * deadline, for x-omni-deadline-ms and both commands' --deadline-ms alike. Text too small for a
 * double ('1e-400', which Number() reads as 0) is Number.MIN_VALUE, the shortest deadline there
 * is (past at once), rather than none or a refusal; text too large is Infinity.
 */
export function positiveDecimal(text: string): number | undefined {
  const value = decimalValue(text);
  return value !== undefined && value > 0 ? value : undefined;
}
