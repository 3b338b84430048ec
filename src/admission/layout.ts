/**
 * The admission's SharedArrayBuffer, word by word. Every thread that attaches reads the same
 * layout. A worker reaches it through BoundedAdmission.attach, which releases the task's claim
 * in the worker before its result is posted (README, Development: what workers/ imports).
 *
 * Bytes 0..7 hold the state word: outstanding requests and units packed into ONE word, so that
 * both bounds are checked and reserved by a single compare-exchange (two separate words would
 * need an undo on the second and let a reservation be visible on one counter but not the
 * other). It is an Int32 when the fields fit (narrow) and a BigUint64 otherwise (wide).
 */

/**
 * Int32 index of the narrow state word: CLOSED | WAITING | requests << shift | units. Used in
 * request-only mode (shift 0, no unit field) and whenever both fields fit in its 29 bits (say
 * 1,023 requests and 2^19 - 1 units): plain Numbers, no BigInt on the hot path.
 */
export const STATE_I32 = 0;
/** BigUint64 index of the wide state word, for unit bounds too large for the narrow one. */
export const STATE_U64 = 0;

/**
 * Int32 index: how many waiters sit in the FIFO queues of all attached instances. While it is
 * non-zero the state word carries the WAITING flag (see below), but for two moments: a new
 * waiter counts itself before it sets the flag, and whoever takes the count to zero clears the
 * flag before it re-checks the count (StateFlags.clearWaiting). The count itself is only read by
 * whoever clears the flag and by report().
 */
export const WAITERS_I32 = 2;
/**
 * Int32 index: wake sequence. Bumped (then notified) by every release whose subtract finds the
 * WAITING or CLOSED flag in the state word, by close(), and by a re-set of WAITING (which stands
 * in for a release that found the flag briefly down, see StateFlags.clearWaiting); waiters and
 * drains block on it with Atomics.waitAsync, so a release on any thread wakes them and a change
 * between "read seq" and "wait" is never lost.
 */
export const SEQ_I32 = 3;
/** Int32 index 4 is unused: it held the leak count before that moved to LEAKED_U64. */
/** Int32 index: the request bound, so an attaching thread can rebuild the configuration. */
export const REQUESTS_I32 = 5;
/** Int32 index: number of claim slots. */
export const SLOTS_I32 = 6;
/** Int32 index: bit shift of the request field (the unit field's width; 0 without units). */
export const SHIFT_I32 = 7;
/**
 * Int32 index: this admission's random id. Claims carry it, so a claim handed to the wrong
 * admission is refused instead of releasing a reservation whose slot happens to match.
 */
export const ID_I32 = 12;
/**
 * Int32 index: claims outstanding (slots reserved). A claim reserves here before it looks for
 * a slot, so exhaustion is decided by one count, not by a scan of slots that other threads
 * free and take meanwhile (a scan can pass a slot just before it is freed and reach the last
 * free one just after it is taken, finding all "in use" while one never stopped being free).
 */
export const CLAIMS_I32 = 13;
/** BigUint64 index: refusals, 64-bit so the count stays exact far past 2^32. */
export const REJECTED_U64 = 4;
/**
 * BigUint64 index (bytes 56..63, Int32 indexes 14 and 15): permits reclaimed by the leak safety
 * net (dropped without release), 64-bit like REJECTED: an Int32 read -2^31 after 2^31 of them.
 */
export const LEAKED_U64 = 7;
/** Float64 index: the unit ceiling, or -1 in request-only mode (units up to 2^53 - 1). */
export const UNIT_CEILING_F64 = 5;
/** Byte offset of the claim slot words (BigUint64 each, so 8-aligned). */
export const SLOTS_BYTE_OFFSET = 64;

/**
 * Flags live in the state word itself, above every counter field, so that the admit fast path
 * is one load and one compare-exchange and a release is one subtract: a word with either flag
 * set compares above every bound (one comparison refuses "full", "closed" and "queued"), and
 * the value a release's Atomics.sub returns tells it whether anyone must be woken.
 *
 * CLOSED: set once by close(). WAITING: set while WAITERS is non-zero, so tryAdmit never barges
 * past a queued waiter; a queue head reserves with the flag masked out.
 */
export const CLOSED_BIT_32 = 1 << 30;
export const WAITING_BIT_32 = 1 << 29;
export const MAX_REQUESTS_32 = WAITING_BIT_32 - 1;
/** The narrow word's counter fields, flags masked off. */
export const NARROW_FIELD_MASK = WAITING_BIT_32 - 1;
/** Unit-mode flags: the top two bits, above both packed fields, for the same reasons. */
export const CLOSED_BIT_64 = 1n << 63n;
export const WAITING_BIT_64 = 1n << 62n;
export const FLAGS_64 = CLOSED_BIT_64 | WAITING_BIT_64;
/** Bits available to the packed request and unit fields below the flags, narrow and wide. */
export const NARROW_FIELD_BITS = 29;
export const WIDE_FIELD_BITS = 62;

/**
 * Claim slot word (BigUint64): generation << 1 | held. The generation advances on every
 * release, so a stale copy of a claim (older generation) can never match a reused slot; it
 * wraps only after 2^53 reuses of one slot (it travels in claims as a plain Number).
 */
export const GENERATION_LIMIT = 2 ** 53;
/** The held bit of a claim slot word; the generation sits above it. */
export const SLOT_HELD = 1n;
/** Claim slots are capped: each costs 16 bytes of shared memory (word + cost), and 4 per block. */
export const MAX_CLAIM_SLOTS = 1 << 16;

/**
 * Claim slots come in blocks of BLOCK_SLOTS (the last one may be shorter), each with an Int32
 * count of its held slots, so that a claim's search passes over a full block with one load
 * instead of one per slot: at 65,536 slots nearly all held (a saturated admission whose claims
 * are released out of order) a search read up to every slot word, ~1 ms a claim. 64 keeps both
 * parts of a search short: 1,024 counts, then at most two blocks of slots.
 */
export const BLOCK_SHIFT = 6;
export const BLOCK_SLOTS = 1 << BLOCK_SHIFT;

/** Total SharedArrayBuffer size for `slots` claim slots (words, Float64 costs, block counts). */
export function bufferBytes(slots: number): number {
  return blockCountsByteOffset(slots) + blockCount(slots) * 4;
}

/** Byte offset of the per-slot cost table (Float64, after the BigUint64 slot words). */
export function costsByteOffset(slots: number): number {
  return SLOTS_BYTE_OFFSET + slots * 8;
}

/** Byte offset of the per-block held counts (Int32, after the costs). */
export function blockCountsByteOffset(slots: number): number {
  return costsByteOffset(slots) + slots * 8;
}

/** How many blocks `slots` claim slots make. */
export function blockCount(slots: number): number {
  return Math.ceil(slots / BLOCK_SLOTS);
}
