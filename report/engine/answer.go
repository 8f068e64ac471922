package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	pmodel "github.com/prometheus/common/model"
)

// The answer of a range query is read as it arrives (jsonStream): the
// envelope's fields one by one, and the matrix one series and one sample at
// a time, so that the report holds the series it decoded and never the
// answer's text. A series' samples are read into one buffer per answer and
// kept in a slice of their exact length: 16 bytes a sample, less than the
// 17 or more of its text, so an answer read up to --query.max-answer-bytes
// holds less than that in samples.

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

// decodeEnvelope reads one answer from s. Keys it does not know (stats,
// trace) are skipped; a result that is not a matrix is not decoded.
func decodeEnvelope(s *jsonStream) (*envelope, error) {
	env := &envelope{}
	var inData error // an error inside data, which says so itself
	err := s.object(func(key string) (err error) {
		switch key {
		case "status":
			env.Status, err = s.optString()
		case "errorType":
			env.ErrorType, err = s.optString()
		case "error":
			env.Error, err = s.optString()
		case "warnings":
			env.Warnings, err = s.strings()
		case "infos":
			env.Infos, err = s.strings()
		case "isPartial":
			env.IsPartial, err = s.bool()
		case "data":
			inData = decodeData(s, env)
			return inData
		default:
			err = s.skip()
		}
		return err
	})
	switch {
	case inData != nil:
		return nil, inData
	case err != nil:
		return nil, fmt.Errorf("an answer that is not JSON: %w", err)
	}
	return env, nil
}

// decodeData reads the data object (or null) into env.
func decodeData(s *jsonStream, env *envelope) error {
	if isNull, err := s.null(); isNull || err != nil {
		if err != nil {
			return fmt.Errorf("a result that does not decode: %w", err)
		}
		return nil // "data": null
	}
	env.hasData = true
	var inMatrix error
	err := s.object(func(key string) (err error) {
		switch {
		case key == "resultType":
			env.ResultType, err = s.optString()
		case key == "result" && (env.ResultType == "" || env.ResultType == "matrix"):
			env.Matrix, inMatrix = decodeMatrix(s)
			return inMatrix
		default:
			err = s.skip()
		}
		return err
	})
	switch {
	case inMatrix != nil:
		return fmt.Errorf("a matrix that does not decode: %w", inMatrix)
	case err != nil:
		return fmt.Errorf("a result that does not decode: %w", err)
	}
	return nil
}

// decodeMatrix reads an array of series (or null), one at a time.
func decodeMatrix(s *jsonStream) (pmodel.Matrix, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return nil, err
	}
	var m pmodel.Matrix
	var buf []pmodel.SamplePair // one series' samples as they are read
	err := s.array(func() error {
		series := &pmodel.SampleStream{}
		err := s.object(func(key string) (err error) {
			switch key {
			case "metric":
				series.Metric, err = decodeMetric(s)
			case "values":
				if buf, err = decodeSamples(s, buf[:0]); err == nil && len(buf) > 0 {
					series.Values = slices.Clone(buf)
				}
			default: // histograms: no series the report reads has them
				err = s.skip()
			}
			return err
		})
		m = append(m, series)
		return err
	})
	return m, err
}

// decodeMetric reads a series' labels (or null).
func decodeMetric(s *jsonStream) (pmodel.Metric, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return nil, err
	}
	metric := pmodel.Metric{}
	err := s.object(func(name string) error {
		value, err := s.str()
		metric[pmodel.LabelName(name)] = pmodel.LabelValue(value)
		return err
	})
	return metric, err
}

// decodeSamples appends the samples [time, "value"] of an array (or null) to
// buf, read as model.SamplePair reads them.
func decodeSamples(s *jsonStream, buf []pmodel.SamplePair) ([]pmodel.SamplePair, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return buf, err
	}
	err := s.array(func() error {
		var p pmodel.SamplePair
		if err := s.expect('['); err != nil {
			return err
		}
		t, err := s.scalar()
		if err != nil {
			return err
		}
		if err := p.Timestamp.UnmarshalJSON(t); err != nil {
			return fmt.Errorf("a sample's time %q: %w", t, err)
		}
		if err := s.expect(','); err != nil {
			return err
		}
		v, err := s.quoted()
		if err != nil {
			return err
		}
		if err := p.Value.UnmarshalJSON(v); err != nil {
			return fmt.Errorf("a sample's value %s: %w", v, err)
		}
		buf = append(buf, p)
		return s.expect(']')
	})
	return buf, err
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
	br := bufio.NewReaderSize(r, answerBufferBytes)
	if looksHTML(br) {
		body, _ := io.ReadAll(io.LimitReader(br, errorBodyBytes))
		return nil, nil, fmt.Errorf("%s, not the Prometheus API's JSON: is --prometheus.url the API's base URL, or does a proxy answer for it?", htmlPage(body))
	}
	env, err := decodeEnvelope(newJSONStream(br))
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

// answerBufferBytes is the buffer an answer is read through.
const answerBufferBytes = 64 << 10

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
