// The small pieces every view draws with: Preact and htm from the vendored file
// (signoff/static/vendor/README.md), a badge, a time, JSON shown readably.

import { html } from "../vendor/preact-htm.module.js";
import { localTime, relative, stateName } from "./format.js";

export { html, render } from "../vendor/preact-htm.module.js";

/** A state, kind or severity as a coloured label, in words ("Approval required"). */
export function Badge({ value }) {
  return html`<span class=${`badge badge-${String(value).toLowerCase()}`}>${stateName(value)}</span>`;
}

/**
 * A date as how far it is from now ("in 3 hours", "5 minutes ago"), the exact time in the
 * reader's locale on hover (`title`) and for machines (`datetime`). `exact` shows the
 * exact time instead, the distance on hover.
 */
export function When({ iso, exact = false }) {
  if (!iso) return "—";
  const [shown, hover] = exact ? [localTime(iso), relative(iso)] : [relative(iso), localTime(iso)];
  return html`<time datetime=${iso} title=${hover}>${shown}</time>`;
}

/** A JSON value as nested lists a person can read. */
export function Readable({ value }) {
  if (Array.isArray(value)) {
    if (!value.length) return html`<span class="empty">(empty list)</span>`;
    return html`<ol class="json-list">${value.map((item) => html`<li><${Readable} value=${item} /></li>`)}</ol>`;
  }
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    if (!keys.length) return html`<span class="empty">(nothing)</span>`;
    return html`<dl class="json">
      ${keys.map((key) => html`<dt>${key}</dt><dd><${Readable} value=${value[key]} /></dd>`)}
    </dl>`;
  }
  if (typeof value === "string") return html`<span class="json-string">${value}</span>`;
  return html`<span class="json-scalar">${JSON.stringify(value)}</span>`;
}

/** A titled JSON value: readable, and as JSON behind a disclosure. */
export function JsonBlock({ title, value }) {
  return html`<section class="json-block">
    <h3>${title}</h3>
    <${Readable} value=${value} />
    <details><summary>${title} as JSON</summary><pre>${JSON.stringify(value, null, 2)}</pre></details>
  </section>`;
}
