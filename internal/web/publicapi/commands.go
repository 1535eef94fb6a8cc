package publicapi

import (
	"net/http"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/waitroom/waitroom/internal/gate/command"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// The order page's commands through the API (internal/gate/command): what
// an answer's Waitroom-Command says through the reverse-proxy gate, said
// by the page's backend, or by the Go middleware for the page (gate's
// Options.CommandURL). The pass is the credential: a command acts only on
// the admission it names, and only as its holder could (done as the
// done endpoint; extend as each pass check of a sliding session).

var (
	errInvalidCommand = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_command",
		Message: "command must be done or extend", Field: "command"}
	errTooManyCommands = &httpkit.Error{Status: http.StatusTooManyRequests, Code: "too_many_commands",
		Message: "too many commands for this pass; try again in a second", RetryAfter: command.PerPassEvery}
)

// CommandRequest is the body of POST .../commands.
type CommandRequest struct {
	Command string `json:"command"` // done or extend
}

// CommandResponse says what a command did: ok, unchanged, not_current or
// unsupported (command.Result*).
type CommandResponse struct {
	Command string `json:"command"`
	Result  string `json:"result"`
}

// Command carries out the order page's command for the admission of the
// pass in Authorization: Bearer.
func (s *API) Command(w http.ResponseWriter, r *http.Request) {
	q, ok := s.kit.KnownQueue(w, r, s.store)
	if !ok {
		return
	}
	body, err := httpkit.Decode[CommandRequest](w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	result, err := s.runCommand(r, q, body.Command)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, CommandResponse{Command: body.Command, Result: result})
}

// runCommand runs one command for queue q with the request's bearer pass,
// and turns the results that refuse the call into errors.
func (s *API) runCommand(r *http.Request, q, cmd string) (string, error) {
	token, _ := reqcheck.BearerToken(r)
	result := s.commands.Run(r.Context(), command.Request{
		Queue: q, Command: cmd, Pass: token, Client: s.clientIP.Addr(r).String(), RequestID: middleware.GetReqID(r.Context()),
	})
	switch result {
	case command.ResultUnknown:
		return "", errInvalidCommand
	case command.ResultNoPass:
		return "", httpkit.ErrInvalidPass
	case command.ResultLimited:
		return "", errTooManyCommands
	case command.ResultFailed:
		return "", httpkit.ErrUnavailable
	}
	return result, nil
}
