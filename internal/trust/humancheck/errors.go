package humancheck

import "errors"

// The two answers of Verify other than nil. Match them with errors.Is.
var (
	// ErrFailed: the token proves no person here (the provider said no,
	// it was solved on another site, used already, empty or oversized).
	// The visitor may solve the check again.
	ErrFailed = errors.New("humancheck: not passed")
	// ErrUnavailable: the provider could not judge (unreachable, slow,
	// failing, answering nonsense, or this process is at its limit of
	// calls). Nothing is known of the visitor: callers fall back to the
	// proof of work at its ceiling, never let them through unchecked.
	ErrUnavailable = errors.New("humancheck: provider unavailable")
)

// Reasons, a bounded set fit for a metric's label.
const (
	ReasonOK          = "ok"
	ReasonRefused     = "refused"      // the provider said no (ErrFailed)
	ReasonHostname    = "hostname"     // solved on a host the room does not serve (ErrFailed)
	ReasonReused      = "reused"       // the token was presented before (ErrFailed)
	ReasonMalformed   = "malformed"    // empty or oversized token (ErrFailed)
	ReasonTimeout     = "timeout"      // no answer within Timeout (ErrUnavailable)
	ReasonUnreachable = "unreachable"  // the call failed (ErrUnavailable)
	ReasonStatus      = "status"       // an answer other than 200 (ErrUnavailable)
	ReasonUnparsable  = "unparsable"   // not the siteverify JSON (ErrUnavailable)
	ReasonMisconfig   = "misconfig"    // the provider refused our secret or request (ErrUnavailable)
	ReasonBusy        = "busy"         // MaxInFlight calls out already (ErrUnavailable)
	ReasonCircuitOpen = "circuit_open" // the provider is away; a probe is out (ErrUnavailable)
	ReasonStore       = "store"        // Redis could not mark the token used (ErrUnavailable)
	ReasonOff         = "off"          // no provider configured (ErrUnavailable)
)

// Error is Verify's error: Kind is ErrFailed or ErrUnavailable, Reason
// says why. Its text never holds the token, the secret or the provider's
// free text.
type Error struct {
	Kind   error
	Reason string
	// Codes are the provider's error-codes of a refusal (at most a few,
	// each cut short): worth a debug log, not a decision.
	Codes []string
}

func (e *Error) Error() string { return e.Kind.Error() + " (" + e.Reason + ")" }
func (e *Error) Unwrap() error { return e.Kind }

func failed(reason string, codes ...string) error {
	return &Error{Kind: ErrFailed, Reason: reason, Codes: codes}
}

func unavailable(reason string, codes ...string) error {
	return &Error{Kind: ErrUnavailable, Reason: reason, Codes: codes}
}

// Reason is err's Reason: ReasonOK for nil, "other" for an error that is
// not Verify's. For counting Verify's results by a bounded label.
func Reason(err error) string {
	if err == nil {
		return ReasonOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "other"
}
