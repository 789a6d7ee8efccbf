// hipocampo hub: the little script the pages use (no inline script: the CSP allows only this file).
// - drag and drop onto the upload form's drop zone;
// - live progress of an upload (polls /hub/uploads/<id>/progress once a second until it finishes).
"use strict";

function setupDropzone() {
  const zone = document.getElementById("dropzone");
  const input = document.getElementById("files");
  if (!zone || !input) return;
  ["dragenter", "dragover"].forEach((ev) => zone.addEventListener(ev, (e) => {
    e.preventDefault();
    zone.classList.add("over");
  }));
  ["dragleave", "drop"].forEach((ev) => zone.addEventListener(ev, () => zone.classList.remove("over")));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    const all = new DataTransfer();
    for (const f of input.files) all.items.add(f);
    for (const f of e.dataTransfer.files) all.items.add(f);
    input.files = all.files;
  });
}

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function renderUpload(box, up) {
  const states = JSON.parse(box.dataset.states);
  const words = JSON.parse(box.dataset.words);
  const kinds = JSON.parse(box.dataset.kinds || "{}");
  const bar = document.getElementById("upload-bar");
  bar.max = Math.max(up.documents, 1);
  bar.value = up.documents_done;
  let summary = `${up.documents_done}/${up.documents} ${words.documents} · ${up.chunks} ${words.chunks} · ` +
    `${up.chunks_per_s} ${words.rate} · ${words.elapsed} ${up.elapsed_s} s`;
  if (up.eta_s !== null) summary += ` · ${words.eta} ${up.eta_s} s`;
  if (up.files_failed) summary += ` · ${up.files_failed} ${words.failed}`;
  document.getElementById("upload-summary").textContent = summary;
  const body = document.querySelector("#upload-files tbody");
  body.replaceChildren(...up.files.map((f) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = f.name;
    const failed = f.state === "failed" || f.state === "refused";
    tr.append(th, cell(states[f.state] || f.state, `state state-${f.state}`),
      cell(`${failed ? 0 : f.documents_done}/${f.documents}`, "num"), cell(String(f.chunks), "num"),
      cell(String(f.pii_replaced), "num"),
      cell(f.forbidden ? (kinds[f.forbidden] || f.forbidden) : (f.error || ""), failed ? "state-failed" : ""));
    return tr;
  }));
  const done = document.getElementById("upload-finished");
  done.hidden = !up.finished;
  done.className = up.files_failed ? "error" : "notice";
  done.textContent = up.files_failed
    ? words.done_failed.replace("{n}", up.files_failed).replace("{total}", up.files.length)
    : words.done;
}

async function pollUpload() {
  const box = document.getElementById("upload");
  if (!box) return;
  for (;;) {
    const res = await fetch(box.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!res.ok) return;
    const up = await res.json();
    renderUpload(box, up);
    if (up.finished) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  setupDropzone();
  pollUpload();
});
