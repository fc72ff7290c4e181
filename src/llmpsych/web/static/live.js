// Live progress: a table carrying data-live is refreshed from that JSON address every two seconds
// while one of its runs is running. Text is set with textContent only (never as HTML).
(function () {
  "use strict";
  function apply(row, run) {
    row.querySelectorAll("[data-field]").forEach(function (cell) {
      var field = cell.getAttribute("data-field");
      if (!(field in run)) return;
      if (cell.tagName === "PROGRESS") { cell.value = run[field]; return; }
      cell.textContent = String(run[field]);
      if (field === "status") cell.className = "status status-" + run.status;
    });
  }
  function running(table) {
    return table.querySelector(".status-running") !== null;
  }
  function poll(table) {
    var url = table.getAttribute("data-live");
    var wasRunning = running(table);
    fetch(url, {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) return;
        var runs = data.runs || [data];
        // a run that started since the page was made: the unfiltered runs page shows it by reloading
        if (data.runs && !location.search && runs.some(function (run) {
          return table.querySelector('[data-run="' + CSS.escape(run.id) + '"]') === null;
        })) { location.reload(); return; }
        runs.forEach(function (run) {
          table.querySelectorAll('[data-run="' + CSS.escape(run.id) + '"]').forEach(function (row) { apply(row, run); });
          if (table.getAttribute("data-run") === run.id) apply(table, run);
        });
        if (wasRunning && !running(table)) table.setAttribute("data-finished", "1");
      })
      .catch(function () {})
      .finally(function () { setTimeout(function () { poll(table); }, 2000); });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live]").forEach(function (table) {
      setTimeout(function () { poll(table); }, 2000);
    });
  });
})();
