/** Decimal notation only: Number() would also take '0x10', '0b11' and '' (as 16, 3 and 0). */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** Whether `text` (trimmed) is a number written in decimal: what the CLI and HTTP front accept. */
export function isDecimal(text: string): boolean {
  return DECIMAL.test(text.trim());
}
