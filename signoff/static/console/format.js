// Turning the API's values into words, in the reader's locale: dates (exact and relative),
// amounts with their currency, state names, one-line JSON, articles.

// Made once: Date.prototype.toLocaleString makes a new formatter on every call, which a
// list of a thousand rows pays for a thousand times. These options are its defaults.
const EXACT = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "numeric",
  day: "numeric",
  hour: "numeric",
  minute: "numeric",
  second: "numeric",
});

/** A date as the reader's locale writes it ("—" for none). */
export function localTime(iso) {
  return iso ? EXACT.format(new Date(iso)) : "—";
}

const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const UNITS = [
  ["second", 60],
  ["minute", 60],
  ["hour", 48],
  ["day", Infinity],
];
const SECONDS = { second: 1, minute: 60, hour: 3600, day: 86400 };

/** How far `iso` is from `now`, in the reader's words: "5 minutes ago", "in 3 hours". */
export function relative(iso, now = Date.now()) {
  const seconds = (new Date(iso).getTime() - now) / 1000;
  let amount = seconds;
  for (const [unit, limit] of UNITS) {
    if (Math.abs(amount) < limit) return RELATIVE.format(Math.trunc(seconds / SECONDS[unit]), unit);
    amount /= limit;
  }
  return RELATIVE.format(Math.trunc(seconds / SECONDS.day), "day");
}

/** How long ago `iso` was (never "in …": a clock a little ahead reads as now). */
export function age(iso, now = Date.now()) {
  return relative(Math.min(new Date(iso).getTime(), now), now);
}

const PLAIN_NUMBER = new Intl.NumberFormat();
const CURRENCIES = new Map();
const CURRENCY_CODE = /^[A-Z]{3}$/;

/**
 * A target's summary value: with its currency when the payload names one beside it (an
 * ISO 4217 `currency` field, as a payment's payload does), `€4,500.00`; else a number in
 * the reader's locale, or the value on one line.
 */
export function summaryValue(value, payload) {
  if (typeof value !== "number") return inline(value);
  const currency = payload && typeof payload.currency === "string" ? payload.currency.toUpperCase() : null;
  if (currency && CURRENCY_CODE.test(currency)) {
    if (!CURRENCIES.has(currency)) {
      try {
        CURRENCIES.set(currency, new Intl.NumberFormat(undefined, { style: "currency", currency }));
      } catch (unknown) {
        CURRENCIES.set(currency, null); // not a currency this browser knows
      }
    }
    const format = CURRENCIES.get(currency);
    if (format) return format.format(value);
  }
  return PLAIN_NUMBER.format(value);
}

/** A state, kind or severity in words: `APPROVAL_REQUIRED` reads "Approval required". */
export function stateName(value) {
  const text = String(value).toLowerCase().replace(/_/g, " ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const INLINE_LIMIT = 80;

/** A JSON value on one short line: `order o-1, lines 2` rather than braces and quotes. */
export function inline(value) {
  let text;
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    text = Object.entries(value).map(([key, v]) => `${key} ${typeof v === "string" ? v : JSON.stringify(v)}`).join(", ");
  } else {
    text = typeof value === "string" ? value : JSON.stringify(value);
  }
  return text.length > INLINE_LIMIT ? `${text.slice(0, INLINE_LIMIT - 1)}…` : text;
}

/** "a" or "an", for the word that follows. */
export function article(word) {
  return /^[aeiou]/i.test(word) ? "an" : "a";
}
