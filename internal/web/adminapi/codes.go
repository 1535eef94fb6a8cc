package adminapi

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// Invitation codes for a lane: an operator makes a batch (the codes are
// in the answer, this once) or uploads their own list; the store keeps
// only their digests (internal/trust/invite). Listed with their uses
// spent, revoked by batch, each change audited with its actor.

// maxCodesBody bounds an upload: MaxCodesPerBatch codes of up to
// invite.MaxInputBytes each, quoted, with a comma.
const maxCodesBody = queue.MaxCodesPerBatch * (invite.MaxInputBytes + 3)

var errCodesDisabled = &httpkit.Error{Status: http.StatusNotFound, Code: "codes_disabled", Message: "invitation codes are not enabled on this server"}

// createCodesRequest is POST .../codes's body: n codes to make, or the
// operator's own codes, for lane; each good for uses uses (default 1)
// until expires_at (RFC 3339; none: until revoked).
type createCodesRequest struct {
	Lane      string   `json:"lane"`
	N         int      `json:"n"`
	Codes     []string `json:"codes"`
	Uses      *int     `json:"uses"`
	ExpiresAt *string  `json:"expires_at"`
}

// CodeBatchView is a batch of codes as the admin API shows it.
type CodeBatchView struct {
	ID    string `json:"id"`
	Lane  string `json:"lane"`
	Codes int    `json:"codes"`
	Uses  int    `json:"uses"`
	// Used is the uses spent, over all the batch's codes.
	Used      int64           `json:"used"`
	Uploaded  bool            `json:"uploaded"`
	CreatedAt string          `json:"created_at"`
	ExpiresAt string          `json:"expires_at,omitempty"`
	RevokedAt string          `json:"revoked_at,omitempty"`
	By        json.RawMessage `json:"by,omitempty"`
}

// CreateCodesResponse is a new batch, with the codes made (none for an
// upload: the operator has them) shown this once.
type CreateCodesResponse struct {
	Batch CodeBatchView `json:"batch"`
	Codes []string      `json:"codes"`
}

// CodeBatchesResponse is GET .../codes's answer, newest first.
type CodeBatchesResponse struct {
	Batches []CodeBatchView `json:"batches"`
}

func batchView(b queue.CodeBatch) CodeBatchView {
	v := CodeBatchView{ID: b.ID, Lane: b.Lane, Codes: b.Codes, Uses: b.Uses, Used: b.Used, Uploaded: b.Uploaded,
		CreatedAt: httpkit.RFC3339(b.CreatedAt), ExpiresAt: httpkit.RFC3339(b.ExpiresAt), RevokedAt: httpkit.RFC3339(b.RevokedAt), By: b.By}
	return v
}

// batch is the queue.CodeBatch and the codes req asks for: made, or
// given; a field out of bounds is refused as invalid_codes.
func (req createCodesRequest) batch() (queue.CodeBatch, []string, error) {
	b := queue.CodeBatch{Lane: req.Lane, Uses: 1}
	if req.Uses != nil {
		b.Uses = *req.Uses
	}
	if req.ExpiresAt != nil && *req.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339, *req.ExpiresAt)
		if err != nil {
			return b, nil, &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_codes", Field: "expires_at", Message: "expires_at must be an RFC 3339 time"}
		}
		b.ExpiresAt = t
	}
	switch {
	case req.N != 0 && req.Codes != nil:
		return b, nil, &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_codes", Message: "give n (codes to make) or codes (your own), not both"}
	case req.Codes != nil:
		b.Uploaded = true
		return b, req.Codes, nil
	case req.N < 1 || req.N > queue.MaxCodesPerBatch:
		return b, nil, &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_codes", Field: "n",
			Message: "n must be 1 to " + strconv.Itoa(queue.MaxCodesPerBatch)}
	}
	return b, invite.Make(req.N), nil
}

// CreateCodes makes a batch of codes for a lane (or stores the operator's
// list) and answers them, this once: JSON, or with Accept: text/csv one
// code a line under a "code" header (the batch's id in Waitroom-Batch).
func (s *API) CreateCodes(w http.ResponseWriter, r *http.Request) {
	if s.codes == nil {
		s.fail(w, r, errCodesDisabled)
		return
	}
	q := chi.URLParam(r, "queue")
	req, err := httpkit.DecodeUpTo[createCodesRequest](w, r, maxCodesBody)
	var b queue.CodeBatch
	var codes, digests []string
	if err == nil {
		b, codes, err = req.batch()
	}
	if err == nil {
		digests, err = s.codes.Digests(q, codes)
	}
	if err == nil {
		if who := s.auditWho(r); who.Actor != nil {
			b.By, _ = json.Marshal(*who.Actor) // two strings always encode
		}
		b, err = s.inspector.AddCodes(r.Context(), q, b, digests)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	changes := []audit.Change{{Field: "lane", New: audit.Value(b.Lane)}, {Field: "codes", New: audit.Value(b.Codes)},
		{Field: "uses", New: audit.Value(b.Uses)}, {Field: "uploaded", New: audit.Value(b.Uploaded)}}
	if !b.ExpiresAt.IsZero() {
		changes = append(changes, audit.Change{Field: "expires_at", New: audit.Value(httpkit.RFC3339(b.ExpiresAt))})
	}
	s.record(r, q, "codes_created", b.ID, changes)
	if b.Uploaded {
		codes = []string{}
	}
	if strings.Contains(r.Header.Get("Accept"), "text/csv") {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="codes-`+q+`-`+b.ID+`.csv"`)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Waitroom-Batch", b.ID)
		w.WriteHeader(http.StatusCreated)
		c := csv.NewWriter(w)
		_ = c.Write([]string{"code"})
		for _, code := range codes {
			_ = c.Write([]string{code})
		}
		c.Flush()
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpkit.WriteJSON(w, http.StatusCreated, CreateCodesResponse{Batch: batchView(b), Codes: codes})
}

// CodeBatches lists a queue's batches of codes with their uses spent.
func (s *API) CodeBatches(w http.ResponseWriter, r *http.Request) {
	bs, err := s.inspector.CodeBatches(r.Context(), chi.URLParam(r, "queue"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := CodeBatchesResponse{Batches: make([]CodeBatchView, len(bs))}
	for i, b := range bs {
		out.Batches[i] = batchView(b)
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// RevokeCodes revokes a batch: none of its codes works from now on.
func (s *API) RevokeCodes(w http.ResponseWriter, r *http.Request) {
	q, id := chi.URLParam(r, "queue"), chi.URLParam(r, "batch")
	if err := s.inspector.RevokeCodes(r.Context(), q, id); err != nil {
		s.fail(w, r, err)
		return
	}
	s.record(r, q, "codes_revoked", id, []audit.Change{{Field: "revoked", Old: audit.Value(false), New: audit.Value(true)}})
	w.WriteHeader(http.StatusNoContent)
}
