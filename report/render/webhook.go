package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// PostWebhook posts r's Markdown as {"text": …}, the payload Slack and
// Mattermost incoming webhooks accept, to the URL held in the file urlFile;
// timeout bounds the POST. The URL is a secret: errors never include it.
func PostWebhook(ctx context.Context, urlFile string, r *Report, timeout time.Duration) error {
	b, err := os.ReadFile(urlFile)
	if err != nil {
		return fmt.Errorf("webhook: read url file: %w", err)
	}
	url := strings.TrimSpace(string(b))
	if url == "" {
		return fmt.Errorf("webhook: url file %s is empty", urlFile)
	}
	var md bytes.Buffer
	if err := Render(&md, r, FormatMarkdown); err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	body, err := json.Marshal(struct {
		Text string `json:"text"`
	}{md.String()})
	if err != nil {
		return fmt.Errorf("webhook: encode payload: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return errors.New("webhook: the url in the url file is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The error text of net/http includes the URL: report only its cause.
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap()
		}
		return fmt.Errorf("webhook: post report: %w", err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook answered %s: %s", resp.Status, strings.TrimSpace(string(snippet)))
	}
	return nil
}
