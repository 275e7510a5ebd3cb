// The players' clocks on a game page run as time passes, with no request: each clock
// that runs (.clock[data-runs]) holds the spans, in Unix seconds, in which it runs until
// it runs out ("start-end start-end", and data-rest: seconds after the last span); the
// time left is what remains of them. The words are CLDR's units in the page's language
// (Intl.NumberFormat), as the server writes them (pbem.i18n.clock_text): days and hours
// from a day on, hours and minutes from an hour on, else minutes.
(function () {
  "use strict";
  var clocks = document.querySelectorAll(".clock[data-runs]");
  if (!clocks.length || !window.Intl || !Intl.NumberFormat) {
    return;
  }
  var lang = document.documentElement.lang || "en";
  var units = {};
  try {
    ["day", "hour", "minute"].forEach(function (unit) {
      units[unit] = new Intl.NumberFormat(lang, {style: "unit", unit: unit, unitDisplay: "long"});
    });
  } catch (e) {
    return;  // a browser without units: the words stay as the server wrote them
  }

  function words(seconds) {
    var minutes = Math.floor(Math.max(0, seconds) / 60);
    var days = Math.floor(minutes / 1440), hours = Math.floor((minutes % 1440) / 60);
    var parts = days ? [[days, "day"], [hours, "hour"]]
      : (hours ? [[hours, "hour"], [minutes % 60, "minute"]] : [[minutes, "minute"]]);
    return parts.filter(function (p, i) { return p[0] || i === 0; })
      .map(function (p) { return units[p[1]].format(p[0]); }).join(" ");
  }

  var parsed = Array.prototype.map.call(clocks, function (el) {
    var spans = el.getAttribute("data-runs").split(" ").map(function (span) {
      var ends = span.split("-");
      return [parseInt(ends[0], 10), parseInt(ends[1], 10)];
    });
    return {el: el, spans: spans, rest: parseInt(el.getAttribute("data-rest"), 10) || 0,
            left: el.querySelector(".clock-left"), state: el.querySelector(".clock-state")};
  });

  function tick() {
    var now = Date.now() / 1000;
    parsed.forEach(function (c) {
      var left = c.rest, running = false;
      c.spans.forEach(function (span) {
        left += Math.max(0, span[1] - Math.max(span[0], now));
        running = running || (span[0] <= now && now < span[1]);
      });
      c.left.textContent = words(left);
      c.el.classList.toggle("running", running);
      if (c.state) {
        c.state.textContent = c.state.getAttribute(running ? "data-running" : "data-stopped");
      }
    });
  }

  tick();
  setInterval(tick, 15000);
})();
