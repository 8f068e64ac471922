package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Webhook is a Slack or Mattermost incoming webhook. Its URL is a secret:
// neither it nor its errors ever show it. It is safe for concurrent use.
type Webhook struct{ url string }

// LoadWebhook reads the webhook's URL from the file urlFile.
func LoadWebhook(urlFile string) (*Webhook, error) {
	b, err := os.ReadFile(urlFile)
	if err != nil {
		return nil, fmt.Errorf("webhook: read url file: %w", err)
	}
	u := strings.TrimSpace(string(b))
	if u == "" {
		return nil, fmt.Errorf("webhook: url file %s is empty", urlFile)
	}
	if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, fmt.Errorf("webhook: url file %s does not hold an http(s) URL", urlFile)
	}
	return &Webhook{url: u}, nil
}

// Post posts r's Markdown as {"text": …}, the payload Slack and Mattermost
// incoming webhooks accept; timeout bounds the POST.
func (w *Webhook) Post(ctx context.Context, r *Report, timeout time.Duration) error {
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
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
