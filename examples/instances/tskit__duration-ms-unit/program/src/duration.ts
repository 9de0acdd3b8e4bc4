/** Milliseconds in one of each unit a duration may be written in. */
export const UNITS: Readonly<Record<string, number>> = {
  d: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
};

/** A text that is not a duration; `input` is the text as it was given. */
export class DurationError extends Error {
  constructor(readonly input: string, reason: string) {
    super(`invalid duration "${input}": ${reason}`);
    this.name = 'DurationError';
  }
}

/** One part of a duration: an amount (digits, maybe a fraction) and its unit, maybe after blanks. */
const PART = new RegExp(`\\s*(\\d+(?:\\.\\d+)?)(${Object.keys(UNITS).join('|')})`, 'y');

/**
 * Milliseconds in a duration such as `1h30m`, `1.5s` or `2d 4h`: parts of an amount and a
 * unit (d, h, m, s, ms), in any order, maybe apart; a leading `-` negates the whole.
 */
export function parseDuration(text: string): number {
  let rest = text.trim();
  const sign = rest.startsWith('-') ? -1 : 1;
  if (sign < 0) {
    rest = rest.slice(1);
  }
  if (rest === '') {
    throw new DurationError(text, 'no parts');
  }
  const part = new RegExp(PART);
  let total = 0;
  while (part.lastIndex < rest.length) {
    const at = part.lastIndex;
    const match = part.exec(rest);
    if (match === null) {
      throw new DurationError(text, `unexpected "${rest.slice(at)}" at ${at}`);
    }
    total += Number(match[1]) * UNITS[match[2]];
  }
  return sign * total;
}

/** A whole number of milliseconds written as parseDuration reads it, largest units first: 90061001 is 1d1h1m1s1ms. */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms)) {
    throw new RangeError(`not a whole number of milliseconds: ${ms}`);
  }
  if (ms === 0) {
    return '0s';
  }
  let rest = Math.abs(ms);
  let out = ms < 0 ? '-' : '';
  for (const [unit, size] of Object.entries(UNITS)) {
    const amount = Math.floor(rest / size);
    if (amount > 0) {
      out += `${amount}${unit}`;
      rest -= amount * size;
    }
  }
  return out;
}
