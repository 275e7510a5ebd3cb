// The game page: a folded round of the log is loaded where it is, the first time the
// reader unfolds it (its link, which opens the round on a page of its own, stays for
// readers without scripts and whenever loading fails).
(function () {
  "use strict";
  var rounds = document.querySelectorAll("#log details[data-src]");
  Array.prototype.forEach.call(rounds, function (round) {
    round.addEventListener("toggle", function () {
      if (!round.open || round.getAttribute("aria-busy") || round.getAttribute("data-loaded")) {
        return;
      }
      var holder = round.querySelector(".log-load");
      round.setAttribute("aria-busy", "true");
      fetch(round.getAttribute("data-src"), {credentials: "same-origin"})
        .then(function (resp) {
          if (!resp.ok) {
            throw new Error("HTTP " + resp.status);
          }
          return resp.text();
        })
        .then(function (html) {
          // this server's own rendering of the round: escaped like every page
          var box = document.createElement("div");
          box.innerHTML = html;
          round.replaceChild(box, holder);
          round.setAttribute("data-loaded", "true");
        })
        .catch(function () { /* the link stays */ })
        .then(function () { round.removeAttribute("aria-busy"); });
    });
  });
})();
