// Hour-by-hour charts, drawn on a canvas by the vendored uPlot (signoff/static/vendor/
// README.md). A canvas says nothing to a screen reader, so each chart is a figure whose
// caption names it and whose figures are also a table behind a disclosure.

import { useEffect, useRef } from "../vendor/preact-htm.module.js";
import uPlot from "../vendor/uPlot.esm.js";
import { html } from "./components.js";

// uPlot's stylesheet comes with the charts (this module loads with the Operations page):
// the pages that draw none, and the approval-link page that shares the console's look, do
// not load it.
if (!document.querySelector("link[data-uplot]")) {
  const sheet = document.createElement("link");
  sheet.rel = "stylesheet";
  sheet.href = "/static/vendor/uPlot.min.css";
  sheet.dataset.uplot = "";
  document.head.append(sheet);
}

const HEIGHT = 180;
const MIN_WIDTH = 260;
const MAX_WIDTH = 760;

/** An hour's start as the reader's clock writes it ("14:00"). */
export function hourLabel(iso) {
  return new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/**
 * One chart of `hours` (the API's OperationsHour rows). `series`: `{ label, value(hour),
 * colour, dash }`, a value of null leaving a gap. `unit` names what the numbers count.
 */
export function HourChart({ id, title, unit, hours, series }) {
  const box = useRef(null);
  const data = [
    hours.map((hour) => Date.parse(hour.start) / 1000),
    ...series.map((line) => hours.map((hour) => line.value(hour))),
  ];
  const drawn = JSON.stringify(data);
  useEffect(() => {
    const element = box.current;
    const width = Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, element.clientWidth || MAX_WIDTH));
    const plot = new uPlot(
      {
        width,
        height: HEIGHT,
        legend: { show: false }, // the caption names the lines; the table has the figures
        cursor: { show: false },
        scales: { x: { time: true }, y: { range: (_, min, max) => [0, Math.max(1, max)] } },
        axes: [{}, { label: unit, size: 56 }],
        series: [
          {},
          ...series.map((line) => ({
            label: line.label,
            stroke: line.colour,
            width: 2,
            dash: line.dash,
            points: { show: true, size: 5, fill: line.colour },
          })),
        ],
      },
      data,
      element,
    );
    return () => plot.destroy();
  }, [drawn]);
  const captionId = `${id}-caption`;
  return html`<figure class="chart" id=${id} aria-labelledby=${captionId}>
    <figcaption id=${captionId}>
      <span class="chart-title">${title}</span>
      ${series.map(
        (line) => html`<span class="chart-key" key=${line.label}>
          <span class=${`chart-swatch ${line.swatch}`} aria-hidden="true"></span>${line.label}
        </span>`,
      )}
    </figcaption>
    <div class="chart-plot" ref=${box} aria-hidden="true"></div>
    <details>
      <summary>${title}, hour by hour</summary>
      <div class="table-scroll">
        <table>
          <thead><tr><th scope="col">Hour from</th>${series.map((line) => html`<th scope="col" key=${line.label}>${line.label}</th>`)}</tr></thead>
          <tbody>
            ${hours.map(
              (hour) => html`<tr key=${hour.start}>
                <th scope="row"><time datetime=${hour.start}>${hourLabel(hour.start)}</time></th>
                ${series.map((line) => html`<td key=${line.label}>${shown(line.value(hour))}</td>`)}
              </tr>`,
            )}
          </tbody>
        </table>
      </div>
    </details>
  </figure>`;
}

function shown(value) {
  return value === null || value === undefined ? "—" : String(value);
}
