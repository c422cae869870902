// @ts-check
// "Export SVG / PNG" beside every plot the page shows (issue 41): the SVG is the plot as
// Python drew it (pyapp/report/plots.py), serialised as it is shown; the PNG is that same SVG
// drawn at twice its size on a canvas. Nothing is drawn or recomputed here.

/** The plot's natural size, from its viewBox (its width and height on the page are CSS's).
 * @param {SVGSVGElement} svg
 * @returns {{width: number, height: number}} */
function naturalSize(svg) {
  const box = svg.viewBox?.baseVal;
  return box && box.width ? { width: box.width, height: box.height } : { width: 760, height: 420 };
}

/** The SVG as a standalone file: its namespace declared, a fixed size, a white background.
 * @param {SVGSVGElement} svg
 * @returns {string} */
export function svgFileText(svg) {
  const copy = /** @type {SVGSVGElement} */ (svg.cloneNode(true));
  const { width, height } = naturalSize(svg);
  copy.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  copy.setAttribute("width", String(width));
  copy.setAttribute("height", String(height));
  copy.setAttribute("style", "background: #fff");
  return new XMLSerializer().serializeToString(copy);
}

/** Save a blob under `name` through a temporary link.
 * @param {Blob} blob
 * @param {string} name */
function save(blob, name) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

/** The PNG of the same SVG at 2×.
 * @param {SVGSVGElement} svg
 * @returns {Promise<Blob>} */
export async function pngBlob(svg) {
  const { width, height } = naturalSize(svg);
  const url = URL.createObjectURL(new Blob([svgFileText(svg)], { type: "image/svg+xml" }));
  try {
    const image = new Image();
    image.src = url;
    await image.decode();
    const canvas = document.createElement("canvas");
    canvas.width = width * 2;
    canvas.height = height * 2;
    const context = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
    context.fillStyle = "#fff";
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.drawImage(image, 0, 0, canvas.width, canvas.height);
    return await new Promise((resolve, reject) =>
      canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("the PNG could not be made"))), "image/png"),
    );
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Add "Export SVG" and "Export PNG" under the plot in `figure` (nothing when it holds none).
 * `name`: the file name without its extension (e.g. calibration-fixture-<run id>).
 * @param {HTMLElement} figure
 * @param {string} name */
export function addExport(figure, name) {
  const svg = figure.querySelector("svg");
  if (!svg) return;
  const title = svg.getAttribute("aria-label") ?? "plot";
  const row = document.createElement("p");
  row.className = "actions plot-export";
  const button = (/** @type {string} */ text, /** @type {() => Promise<void>} */ work) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.setAttribute("aria-label", `${text} — ${title}`);
    b.addEventListener("click", () => work().catch((error) => (b.title = `failed: ${error.message}`)));
    return b;
  };
  row.append(
    button("Export SVG", async () => save(new Blob([svgFileText(svg)], { type: "image/svg+xml" }), `${name}.svg`)),
    button("Export PNG", async () => save(await pngBlob(svg), `${name}.png`)),
  );
  figure.append(row);
}
