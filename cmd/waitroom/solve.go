package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/trust/challenge"
)

// `waitroom solve` is a shell's way to pay the proof of work a queue asks
// before entering, as the waiting page's worker does in a browser: it reads
// a challenge (GET /api/v1/queues/{queue}/challenge's answer on stdin, or
// -challenge and -difficulty) and prints the body to enter with,
// {"challenge":"…","nonce":"…"}. Without it, docs/API.md's curl walk-through
// would go on with no place when the queue answers challenge_required.

// maxSolveInput bounds what solve reads from stdin: a challenge's answer
// is about 150 bytes.
const maxSolveInput = 64 << 10

// maxChallengeBytes bounds a challenge: the service's are under 100 bytes
// plus the queue's name.
const maxChallengeBytes = 512

// errSolveInput is any input solve cannot take; its message says why.
var errSolveInput = errors.New("solve")

// solveUsage is what -h prints before the flags.
const solveUsage = `usage: waitroom solve [-challenge C [-difficulty N]] < challenge.json

Reads a proof-of-work challenge, GET /api/v1/queues/{queue}/challenge's
answer, on stdin (or from the flags), solves it as the waiting page does
and prints the enter body to send back: {"challenge":"…","nonce":"…"}.

  curl -s localhost:8080/api/v1/queues/default/challenge | waitroom solve |
    curl -s -c jar -H 'Content-Type: application/json' -d @- localhost:8080/api/v1/queues/default/enter
`

// solveMain runs `waitroom solve` with args (after "solve") and returns
// the process's exit code: 0 with the solution on stdout, 2 for input it
// cannot take, with the reason on stderr.
func solveMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ch, difficulty, err := solveInput(args, stdin, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "waitroom:", err)
		return 2
	}
	out := json.NewEncoder(stdout)
	out.SetEscapeHTML(false)
	if err := out.Encode(map[string]string{"challenge": ch, "nonce": challenge.Solve(ch, difficulty)}); err != nil {
		fmt.Fprintln(stderr, "waitroom solve:", err)
		return 1
	}
	return 0
}

// solveInput is the challenge and difficulty to solve, from the flags in
// args or else the JSON on stdin; it never solves anything, so any input
// can be tried against it.
func solveInput(args []string, stdin io.Reader, stderr io.Writer) (string, int, error) {
	fs := flag.NewFlagSet("waitroom solve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, solveUsage, "\n")
		fs.PrintDefaults()
	}
	flagChallenge := fs.String("challenge", "", "the challenge (instead of stdin)")
	flagDifficulty := fs.Int("difficulty", 0, "its difficulty in leading zero bits (default: the one the challenge states)")
	if err := fs.Parse(args); err != nil {
		return "", 0, err
	}
	if fs.NArg() > 0 {
		return "", 0, fmt.Errorf("%w: unexpected argument %q", errSolveInput, fs.Arg(0))
	}
	d := -1 // the challenge's own
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "difficulty" {
			d = *flagDifficulty
		}
	})
	if d < -1 || d == -1 && *flagDifficulty != 0 {
		return "", 0, fmt.Errorf("%w: difficulty %d: want 0…%d", errSolveInput, *flagDifficulty, queue.MaxChallengeDifficulty)
	}
	if *flagChallenge != "" {
		return checkSolveInput(*flagChallenge, d)
	}
	if d >= 0 {
		return "", 0, fmt.Errorf("%w: -difficulty needs -challenge", errSolveInput)
	}
	return decodeChallenge(stdin)
}

// challengeAnswer is what solve reads on stdin: the challenge endpoint's
// answer, or, to be told what to do instead, any error answer.
type challengeAnswer struct {
	Challenge  *string `json:"challenge"`
	Difficulty *int    `json:"difficulty"`
	Error      *struct {
		Code string `json:"code"`
	} `json:"error"`
	Status string `json:"status"` // a ticket's
}

// decodeChallenge reads one JSON object from r: a challenge's answer.
func decodeChallenge(r io.Reader) (string, int, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSolveInput+1))
	if err != nil {
		return "", 0, fmt.Errorf("%w: reading stdin: %v", errSolveInput, err)
	}
	if len(b) > maxSolveInput {
		return "", 0, fmt.Errorf("%w: stdin holds over %d bytes; a challenge's answer is one small JSON object", errSolveInput, maxSolveInput)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return "", 0, fmt.Errorf("%w: nothing on stdin: pipe GET /api/v1/queues/{queue}/challenge's answer, or give -challenge", errSolveInput)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	var a challengeAnswer
	if err := dec.Decode(&a); err != nil {
		return "", 0, fmt.Errorf("%w: stdin is not a challenge's JSON answer: %v", errSolveInput, err)
	}
	if dec.More() {
		return "", 0, fmt.Errorf("%w: stdin holds more than one JSON value", errSolveInput)
	}
	switch {
	case a.Error != nil && a.Error.Code == queue.RefusedChallenge:
		// Enter's refusal names the difficulty but brings no challenge:
		// one is asked for apart, so that any client can get a fresh one.
		return "", 0, fmt.Errorf("%w: this is enter's refusal (challenge_required), which carries no challenge: "+
			"pipe GET /api/v1/queues/{queue}/challenge's answer instead", errSolveInput)
	case a.Error != nil:
		return "", 0, fmt.Errorf("%w: stdin is an error answer (%q), not a challenge", errSolveInput, a.Error.Code)
	case a.Challenge == nil && a.Status != "":
		return "", 0, fmt.Errorf("%w: stdin is a ticket (status %s), not a challenge: that enter needed no proof of work", errSolveInput, a.Status)
	case a.Challenge == nil:
		return "", 0, fmt.Errorf("%w: stdin has no \"challenge\"", errSolveInput)
	}
	d := -1
	if a.Difficulty != nil {
		if *a.Difficulty < 0 {
			return "", 0, fmt.Errorf("%w: difficulty %d: want 0…%d", errSolveInput, *a.Difficulty, queue.MaxChallengeDifficulty)
		}
		d = *a.Difficulty
	}
	return checkSolveInput(*a.Challenge, d)
}

// checkSolveInput accepts challenge at difficulty (-1: the one it states)
// when the service could have issued it: printable ASCII, and a
// difficulty a queue may ask (a higher one would run for days). A
// difficulty other than the challenge's own would be refused by enter.
func checkSolveInput(ch string, difficulty int) (string, int, error) {
	if ch == "" {
		return "", 0, fmt.Errorf("%w: the challenge is empty", errSolveInput)
	}
	if len(ch) > maxChallengeBytes {
		return "", 0, fmt.Errorf("%w: the challenge is %d bytes, over %d", errSolveInput, len(ch), maxChallengeBytes)
	}
	for i := 0; i < len(ch); i++ {
		if ch[i] < 0x21 || ch[i] > 0x7e {
			return "", 0, fmt.Errorf("%w: the challenge has a byte 0x%02x; a challenge is printable ASCII without spaces", errSolveInput, ch[i])
		}
	}
	stated, ok := challenge.Stated(ch)
	switch {
	case difficulty < 0 && !ok:
		return "", 0, fmt.Errorf("%w: the challenge states no difficulty: give -difficulty", errSolveInput)
	case difficulty < 0:
		difficulty = stated
	case ok && difficulty != stated:
		return "", 0, fmt.Errorf("%w: difficulty %d, but the challenge was issued at %d", errSolveInput, difficulty, stated)
	}
	if difficulty > queue.MaxChallengeDifficulty {
		return "", 0, fmt.Errorf("%w: difficulty %d: want 0…%d", errSolveInput, difficulty, queue.MaxChallengeDifficulty)
	}
	return ch, difficulty, nil
}
