// Progressive enhancement only: every page works without this file.
"use strict";
document.addEventListener("click", (event) => {
  // A problem beside the editor: jump to its line.
  const link = event.target.closest("[data-line]");
  const editor = document.getElementById("deck-text");
  if (!link || !editor) return;
  event.preventDefault();
  const line = Number(link.dataset.line);
  const lines = editor.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((sum, text) => sum + text.length + 1, 0);
  editor.focus();
  editor.setSelectionRange(start, start + (lines[line - 1] || "").length);
});
