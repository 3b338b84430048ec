/**
 * The "did you mean" guess shared by option keys and the command line: a typo is any name within
 * two edits (inserted, deleted or replaced letters, case aside), and the nearest one is named;
 * a third edit is another word, and gets no guess.
 */
import { describe, expect, it } from 'vitest';
import { nearestName } from '../src/nearest-name.js';

describe('nearestName', () => {
  it.each([
    ['two letters left out', 'tread', ['threads'], 'threads'],
    ['two letters too many', 'threadsxy', ['threads'], 'threads'],
    ['two letters replaced', 'thraeds', ['threads'], 'threads'],
    ['the case of every letter', 'THREADS', ['threads'], 'threads'],
    ["a camelCase name's case", 'maxrowsperthread', ['maxRowsPerThread'], 'maxRowsPerThread'],
  ])('%s: a typo', (_what, name, valid, near) => {
    expect(nearestName(name, valid)).toBe(near);
  });

  it.each([
    ['three letters left out', 'thre', ['threads']],
    ['three letters too many', 'threadsxyz', ['threads']],
    ['three letters replaced', 'thxyzds', ['threads']],
    // Letters left out at the front count as those at the end do.
    ['three leading letters left out', 'eads', ['threads']],
  ])('%s: another word, no guess', (_what, name, valid) => {
    expect(nearestName(name, valid)).toBeUndefined();
  });

  it('names the nearest, wherever it is listed', () => {
    expect(nearestName('costs', ['costs2', 'costs'])).toBe('costs');
    expect(nearestName('costs', ['costs', 'costs2'])).toBe('costs');
    expect(nearestName('rates', ['rats', 'rates'])).toBe('rates');
  });

  it('of names as near, the one listed first', () => {
    expect(nearestName('cost', ['cast', 'coast', 'costs'])).toBe('cast');
    expect(nearestName('cost', ['costs', 'cast'])).toBe('costs');
  });
});
