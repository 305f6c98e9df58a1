// Starts Swagger UI on this server's /openapi.json. A file of its own, not an inline script:
// the page's Content-Security-Policy allows scripts from this server only.
"use strict";
window.ui = SwaggerUIBundle({
  url: "openapi.json",            // relative to /docs: this server's own description
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,             // else Swagger UI loads a badge from validator.swagger.io
  persistAuthorization: false,    // a key typed into "Authorize" stays in this page only
  displayRequestDuration: true,
  tryItOutEnabled: false,
  // "Try it out" calls the servers the document lists: "/", this server.
  supportedSubmitMethods: ["get", "post"],
});
