// The home page: a time zone list nobody has chosen from yet (data-browser-zone) is set
// to this browser's zone. A zone the browser names by an older alias (Chromium says
// "Asia/Calcutta" for Asia/Kolkata) is matched by asking the browser for each option's name.
(function () {
  "use strict";
  var zone = "";
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  } catch (e) {
    return;
  }
  var lists = document.querySelectorAll("select[data-browser-zone]");
  if (!zone || !lists.length) {
    return;
  }
  var values = Array.prototype.map.call(lists[0].options, function (o) { return o.value; });
  var match = values.indexOf(zone) >= 0 ? zone : "";
  for (var i = 0; !match && i < values.length; i++) {
    try {
      if (new Intl.DateTimeFormat("en", {timeZone: values[i]}).resolvedOptions().timeZone === zone) {
        match = values[i];
      }
    } catch (e) { /* a zone this browser does not know */ }
  }
  if (match) {
    Array.prototype.forEach.call(lists, function (list) { list.value = match; });
  }
})();
