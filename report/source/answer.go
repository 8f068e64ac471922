package source

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	pmodel "github.com/prometheus/common/model"
)

// The answer of a range query is read as it arrives: the envelope's fields
// one by one, and the matrix one series at a time, so that the report holds
// the series it decoded and never the answer's text (tens of MB for a
// request of half a million samples; decoding it whole also copied it twice,
// once per level of the envelope).

// envelope is what decodeEnvelope read of the JSON answer of the Prometheus
// HTTP API, with the fields other engines add.
type envelope struct {
	Status     string
	ErrorType  string
	Error      string
	Warnings   []string
	Infos      []string // Prometheus 3
	IsPartial  bool     // VictoriaMetrics
	hasData    bool     // data was an object, not absent or null
	ResultType string
	Matrix     pmodel.Matrix // data.result, when ResultType is matrix
}

// decodeEnvelope reads one answer from dec. Keys it does not know (stats,
// trace) are skipped; a result that is not a matrix is not decoded.
func decodeEnvelope(dec *json.Decoder) (*envelope, error) {
	env := &envelope{}
	if err := openObject(dec); err != nil {
		return nil, fmt.Errorf("an answer that is not JSON: %w", err)
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return nil, fmt.Errorf("an answer that is not JSON: %w", err)
		}
		switch key {
		case "status":
			err = dec.Decode(&env.Status)
		case "errorType":
			err = dec.Decode(&env.ErrorType)
		case "error":
			err = dec.Decode(&env.Error)
		case "warnings":
			err = dec.Decode(&env.Warnings)
		case "infos":
			err = dec.Decode(&env.Infos)
		case "isPartial":
			err = dec.Decode(&env.IsPartial)
		case "data":
			err = decodeData(dec, env)
		default:
			err = skipValue(dec)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("an answer that is not JSON: %w", err)
	}
	return env, nil
}

// decodeData reads the data object (or null) into env.
func decodeData(dec *json.Decoder, env *envelope) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("a result that does not decode: %w", err)
	}
	if t == nil {
		return nil // "data": null
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("a result that does not decode: data is %v, not an object", t)
	}
	env.hasData = true
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return fmt.Errorf("a result that does not decode: %w", err)
		}
		switch {
		case key == "resultType":
			if err := dec.Decode(&env.ResultType); err != nil {
				return fmt.Errorf("a result that does not decode: %w", err)
			}
		case key == "result" && (env.ResultType == "" || env.ResultType == "matrix"):
			if env.Matrix, err = decodeMatrix(dec); err != nil {
				return fmt.Errorf("a matrix that does not decode: %w", err)
			}
		default:
			if err := skipValue(dec); err != nil {
				return fmt.Errorf("a result that does not decode: %w", err)
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("a result that does not decode: %w", err)
	}
	return nil
}

// decodeMatrix reads an array of series (or null), one at a time.
func decodeMatrix(dec *json.Decoder) (pmodel.Matrix, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, nil
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("result is %v, not an array", t)
	}
	var m pmodel.Matrix
	for dec.More() {
		s := &pmodel.SampleStream{}
		if err := dec.Decode(s); err != nil {
			return nil, err
		}
		m = append(m, s)
	}
	_, err = dec.Token()
	return m, err
}

// openObject reads the opening brace of an object.
func openObject(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("%v is not an object", t)
	}
	return nil
}

// objectKey reads the next key of an object.
func objectKey(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := t.(string)
	if !ok {
		return "", errors.New("an object key that is not a string")
	}
	return key, nil
}

// skipValue reads past one value, however nested, without keeping it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// decodeAnswer returns the matrix of a range query's answer and what the
// engine said of its completeness, or an *engineError. A successful answer
// is decoded as it is read, one series at a time: only the matrix is held,
// not the answer's text. An HTML page where the API's JSON should be (a
// proxy's error or login page) is named as one.
func decodeAnswer(status int, r io.Reader) (pmodel.Matrix, []string, error) {
	if status/100 != 2 {
		body, err := io.ReadAll(io.LimitReader(r, errorBodyBytes))
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, engineErrorOf(status, body)
	}
	br := bufio.NewReader(r)
	if looksHTML(br) {
		body, _ := io.ReadAll(io.LimitReader(br, errorBodyBytes))
		return nil, nil, fmt.Errorf("%s, not the Prometheus API's JSON: is --prometheus.url the API's base URL, or does a proxy answer for it?", htmlPage(body))
	}
	env, err := decodeEnvelope(json.NewDecoder(br))
	switch {
	case err != nil:
		return nil, nil, err
	case env.Status != "success":
		text := env.Error
		if text == "" {
			text = fmt.Sprintf("status %q", env.Status)
		}
		return nil, nil, &engineError{status: status, errorType: env.ErrorType, text: text}
	case !env.hasData:
		return nil, nil, errors.New("no result, want a matrix")
	case env.ResultType != "matrix":
		return nil, nil, fmt.Errorf("a %q result, want a matrix", env.ResultType)
	}
	warnings := env.Warnings
	for _, info := range env.Infos {
		if saysDataMissing(info) {
			warnings = append(warnings, info)
		}
	}
	if env.IsPartial {
		warnings = append(warnings, "the engine marked its answer partial (isPartial: a storage node did not answer)")
	}
	return env.Matrix, warnings, nil
}

// errorBodyBytes is the most of an error answer read: its JSON envelope or
// the proxy's page that says why.
const errorBodyBytes = 64 << 10

// engineErrorOf is the *engineError of an answer that is not 2xx.
func engineErrorOf(status int, body []byte) *engineError {
	var env struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err == nil && env.Error != "" {
		return &engineError{status: status, errorType: env.ErrorType, text: env.Error}
	}
	text := strings.TrimSpace(truncate(string(body), 512))
	if looksHTML(bufio.NewReader(bytes.NewReader(body))) {
		text = htmlPage(body)
	}
	return &engineError{status: status, errorType: env.ErrorType, text: text}
}

// looksHTML reports whether the answer in r (not consumed) begins, after
// white space, with '<': no JSON does.
func looksHTML(r *bufio.Reader) bool {
	head, _ := r.Peek(512)
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] == '<'
}

// htmlPage names an HTML page by its title: `an HTML page ("Sign in")`.
func htmlPage(body []byte) string {
	lower := bytes.ToLower(body)
	from, to := bytes.Index(lower, []byte("<title>")), bytes.Index(lower, []byte("</title>"))
	if from < 0 || to < from {
		return "an HTML page"
	}
	title := strings.Join(strings.Fields(string(body[from+len("<title>"):to])), " ")
	return fmt.Sprintf("an HTML page (%q)", truncate(title, 120))
}

// saysDataMissing reports whether an engine's info annotation says that part
// of the data was not read (rather than, say, that a metric name does not end
// in _total).
func saysDataMissing(info string) bool {
	s := strings.ToLower(info)
	for _, w := range []string{"partial", "missing", "unavailable", "not queried", "failed to"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
