// The dev mailbox: an email's HTML frame grows to the height of the email, so the whole
// email shows without a scroll bar of its own. (The frame runs no scripts itself.)
(function () {
  "use strict";
  function fit(frame) {
    var doc = frame.contentDocument;
    if (doc && doc.documentElement) {
      frame.style.height = "0px";  // measured afresh: the email may have got shorter
      frame.style.height = doc.documentElement.scrollHeight + 2 + "px";
    }
  }
  Array.prototype.forEach.call(document.querySelectorAll("iframe.mail-html"), function (frame) {
    frame.addEventListener("load", function () { fit(frame); });
    window.addEventListener("resize", function () { fit(frame); });
    fit(frame);
  });
})();
