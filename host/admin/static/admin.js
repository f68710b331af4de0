// Live updates of the operator page: the server sends the page's main
// part as HTML (rendered and escaped by the server) whenever it changes.
(function () {
  "use strict";
  var main = document.getElementById("main");
  var live = document.getElementById("live");
  if (!main || !window.EventSource) { return; }
  function show(cls, text) { live.className = "pill " + cls; live.textContent = text; }
  var es;
  function open() {
    es = new EventSource("/api/events");
    es.addEventListener("open", function () { show("ok", "live"); });
    es.addEventListener("state", function (e) { main.innerHTML = e.data; show("ok", "live"); });
    es.addEventListener("error", function () {
      show("warn", "reconnecting…");
      // A stream refused for want of a session: back to the login form.
      fetch("/api/state", { credentials: "same-origin" }).then(function (r) {
        if (r.status === 401) { es.close(); window.location.assign("/login"); }
      }).catch(function () {});
    });
  }
  open();
})();
