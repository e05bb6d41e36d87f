/* The console's preview: the real widget.js or page.js, talking to this socket instead of the deployment's.
   It answers in the browser, so a preview never runs the agent, spends nothing and opens no conversation. */
(function () {
  var NOTE = "This is a preview of how it looks. On your site, the agent answers here.";
  function PreviewSocket() {
    var self = this;
    this.readyState = 0;
    function emit(type, data) { if (self.onmessage) self.onmessage({ data: JSON.stringify({ type: type, data: data || {} }) }); }
    setTimeout(function () { self.readyState = 1; if (self.onopen) self.onopen({}); emit("ready", { preview: true }); }, 0);
    this.send = function () {
      setTimeout(function () {
        emit("model_request_start");
        emit("text_delta", { content: NOTE });
        emit("final_result", { output: NOTE });
        emit("complete");
      }, 120);
    };
    this.close = function () { self.readyState = 3; };
  }
  PreviewSocket.CONNECTING = 0; PreviewSocket.OPEN = 1; PreviewSocket.CLOSING = 2; PreviewSocket.CLOSED = 3;
  window.WebSocket = PreviewSocket;
})();
