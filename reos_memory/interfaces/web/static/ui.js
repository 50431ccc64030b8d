// Conveniences only: every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // a "select all" box above the memories' checkboxes
  const bulk = document.getElementById("bulk");
  if (bulk) {
    const boxes = bulk.querySelectorAll('input[name="ids"]');
    const head = bulk.querySelector("thead th");
    if (boxes.length && head) {
      const all = document.createElement("input");
      all.type = "checkbox";
      all.setAttribute("aria-label", "select every memory on this page");
      all.addEventListener("change", () => boxes.forEach((b) => { b.checked = all.checked; }));
      head.appendChild(all);
    }
  }
});
