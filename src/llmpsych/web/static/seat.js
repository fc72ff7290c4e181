// Live pages of a hosted session (seat pages and the monitor), without reloading on a timer.
// A block carrying data-events listens to that server-sent event stream; each event is a short
// signature of what the page shows. When it differs from the block's data-signature, the page is
// fetched again and the block's content swapped in place (HTML made by this server, escaped by its
// templates); a page whose content cannot be read is loaded again as a whole. A countdown
// (#countdown data-left) ticks every second from the seconds left when the page was made; the server
// decides the deadline, and its next event moves the page on.
(function () {
  "use strict";
  var timer = null;

  function countdown() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    var box = document.getElementById("countdown");
    if (!box || box.getAttribute("data-paused") === "1") return;
    var left = parseInt(box.getAttribute("data-left"), 10);
    var start = Date.now();
    var shown = document.getElementById("left");
    function tick() {
      var now = Math.max(0, left - Math.floor((Date.now() - start) / 1000));
      if (shown) shown.textContent = String(now);
      if (now <= 10) box.classList.add("low");
      if (now === 0) { clearInterval(timer); timer = null; }
    }
    tick();
    timer = setInterval(tick, 1000);
  }

  function swap(live, signature) {
    var typing = document.activeElement && document.activeElement.id === "answer";
    fetch(location.pathname + location.search, {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { return r.text().then(function (t) { return [r.status, t]; }); })
      .then(function (got) {
        var doc = new DOMParser().parseFromString(got[1], "text/html");
        var fresh = doc.getElementById("live");
        if (!fresh) { location.reload(); return; }
        // what the person entered so far (a typed number, a chosen radio, a plan's shares), by field
        var kept = [];
        live.querySelectorAll("form input[name=answer], form input[name=share]").forEach(function (f) {
          kept.push([f.id, f.type, f.value, f.checked]);
        });
        var oldKey = live.querySelector("input[name=key]");
        var newKey = fresh.querySelector("input[name=key]");
        live.innerHTML = fresh.innerHTML;
        live.setAttribute("data-signature", fresh.getAttribute("data-signature") || signature);
        var input = document.getElementById("answer");
        if (oldKey && newKey && oldKey.value === newKey.value) {
          var fields = live.querySelectorAll("form input[name=answer], form input[name=share]");
          kept.forEach(function (k, i) {
            var f = fields[i];
            if (!f || f.id !== k[0] || f.type !== k[1]) return;
            if (f.type === "radio") f.checked = k[3]; else f.value = k[2];
          });
        }
        if (input && (typing || !oldKey)) input.focus();
        document.title = doc.title;
        countdown();
      })
      .catch(function () {});
  }

  function listen(live) {
    var url = live.getAttribute("data-events");
    var source = new EventSource(url);
    source.onmessage = function (event) {
      if (event.data !== live.getAttribute("data-signature")) swap(live, event.data);
    };
  }

  document.addEventListener("DOMContentLoaded", function () {
    var live = document.getElementById("live");
    if (live && live.getAttribute("data-events")) listen(live);
    countdown();
  });
})();
