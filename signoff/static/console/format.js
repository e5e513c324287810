// Turning the API's values into words: dates, ages, one-line JSON, articles.

/** A date as the reader's locale writes it ("—" for none). */
export function localTime(iso) {
  return iso ? new Date(iso).toLocaleString() : "—";
}

/** How long ago `iso` was, in a few words. */
export function age(iso) {
  const seconds = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  if (seconds < 60) return "just now";
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} days ago`;
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
