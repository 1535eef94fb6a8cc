// Package api holds waitroom's HTTP contract: the OpenAPI 3.1 document of
// every public and admin endpoint, served at GET /api/openapi.yaml and
// checked against the real server by internal/web/httpapi's contract test.
package api

import _ "embed"

// OpenAPI is the document, openapi.yaml. Read it, never write into it: the
// server hands these bytes to every client.
//
//go:embed openapi.yaml
var OpenAPI []byte
