// kijito-local view: live timeline rows by Server-Sent Events. Every field
// goes in as text (textContent), never as HTML (shared/server/src/view.rs).
(function () {
  "use strict";
  var body = document.body;
  var session = body.getAttribute("data-session");
  if (!session || !window.EventSource) { return; }
  var after = body.getAttribute("data-last-seq") || "0";
  var source = new EventSource("/events/" + encodeURIComponent(session) + "?after=" + encodeURIComponent(after));
  source.addEventListener("line", function (m) {
    var e = JSON.parse(m.data);
    var tbody = document.querySelector("#timeline tbody");
    if (!tbody) { return; }
    var tr = document.createElement("tr");
    tr.className = "ev live";
    tr.setAttribute("data-kind", String(e.kind));
    tr.setAttribute("data-seq", String(e.seq));
    [e.time, e.kind, e.badge || "", e.detail].forEach(function (text) {
      var td = document.createElement("td");
      td.textContent = String(text);
      tr.appendChild(td);
    });
    tbody.appendChild(tr);
    body.setAttribute("data-last-seq", String(e.seq));
  });
})();
