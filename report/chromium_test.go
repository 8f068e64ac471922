package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/gputally/gputally/report/render"
)

// TestHTMLInChromium opens the HTML report in headless Chromium through the
// DevTools protocol: the page must log no errors or exceptions, each chart must
// have drawn elements, and a screenshot is written (to $REPORT_SCREENSHOT_DIR
// when set, else the test's temporary directory). The report follows up its
// own week moved a week back, so that the follow-up and its weeks' chart are
// on the page. Without chromium the test skips, unless CI is set.
func TestHTMLInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if bin, err = exec.LookPath("chromium-browser"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("chromium not found and CI is set: install it (apt-get install -y chromium)")
			}
			t.Skip("chromium not found")
		}
	}
	dir := t.TempDir()
	cfg := testConfig()
	cfg.Baseline = weekBefore(t, dir)
	r, err := generateFrom(context.Background(), cfg, fleetQuerier(testFleet(), time.Hour), discard())
	if err != nil {
		t.Fatal(err)
	}
	r.Source = "test"
	page := filepath.Join(dir, "report.html")
	file, err := createOutput(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := file.write(r, FormatHTML); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("REPORT_SCREENSHOT_DIR")
	if shots == "" {
		shots = dir
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
		"--remote-allow-origins=*", "--window-size=1200,2400", "about:blank")
	// Its own process group, killed whole: the renderer and helper processes
	// would otherwise outlive the browser and write to the profile while the
	// test's temporary directory is removed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	wsURL := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				wsURL <- m[1]
			}
		}
	}()
	var url string
	select {
	case url = <-wsURL:
	case <-ctx.Done():
		t.Fatal("chromium did not print its DevTools address")
	}
	c, err := dialCDP(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.ws.Close()

	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		t.Fatal(err)
	}
	s := attached.SessionID
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		if err := c.call(s, m, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.call(s, "Page.navigate", map[string]any{"url": "file://" + page}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.waitEvent("Page.loadEventFired"); err != nil {
		t.Fatal(err)
	}
	var eval struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	expr := `JSON.stringify({
		idle: document.querySelectorAll("#chart-idle-eur rect.bar").length,
		heat: document.querySelectorAll("#chart-heatmap rect.cell").length,
		timeline: document.querySelectorAll("#chart-timeline rect.busy:not(.legend), #chart-timeline rect.idle:not(.legend), #chart-timeline rect.unallocated:not(.legend)").length,
		visible: [...document.querySelectorAll("svg")].every(s => s.getBoundingClientRect().width > 100 && s.getBoundingClientRect().height > 50),
		recs: document.querySelectorAll("#recommendations tr").length,
		weeks: document.querySelectorAll("#chart-weeks rect.idle:not(.legend), #chart-weeks rect.unallocated:not(.legend)").length,
		followUp: document.querySelectorAll("#follow-up-items tr").length,
	})`
	if err := c.call(s, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &eval); err != nil {
		t.Fatal(err)
	}
	var dom struct {
		Idle, Heat, Timeline, Recs, Weeks, FollowUp int
		Visible                                     bool
	}
	if err := json.Unmarshal([]byte(eval.Result.Value), &dom); err != nil {
		t.Fatalf("evaluate: %v (%q)", err, eval.Result.Value)
	}
	if dom.Idle != len(r.Namespaces) || dom.Heat != 7*24 || dom.Timeline < len(r.Timeline) || !dom.Visible || dom.Recs != len(r.Recommendations)+1 ||
		dom.Weeks != 2*2 || dom.FollowUp != len(r.Recommendations)+1 {
		t.Errorf("DOM: %+v; want %d idle bars, 168 heatmap cells, at least %d timeline bars, all charts visible, %d recommendation rows, "+
			"2 weeks of idle and unallocated bars, %[4]d follow-up rows", dom, len(r.Namespaces), len(r.Timeline), len(r.Recommendations)+1)
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := c.call(s, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot); err != nil {
		t.Fatal(err)
	}
	img, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := png.Decode(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := decoded.Bounds(); b.Dx() < 800 || b.Dy() < 600 {
		t.Errorf("screenshot is %v, want at least 800×600", b)
	}
	out := filepath.Join(shots, "report.png")
	if err := os.WriteFile(out, img, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
	// Let anything still queued arrive, then check the page logged no errors.
	if err := c.call(s, "Runtime.evaluate", map[string]any{"expression": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(c.errors) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(c.errors, "\n"))
	}
}

// cdp is a minimal Chrome DevTools protocol client: calls are sequential;
// events that arrive while waiting are recorded (errors) or matched (waitEvent).
type cdp struct {
	ws     *websocket.Conn
	id     int
	events []string
	errors []string
}

type cdpMessage struct {
	ID     int             `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func dialCDP(url string) (*cdp, error) {
	ws, err := websocket.Dial(url, "", "http://127.0.0.1/")
	if err != nil {
		return nil, fmt.Errorf("dial devtools: %w", err)
	}
	ws.MaxPayloadBytes = 64 << 20
	ws.SetDeadline(time.Now().Add(60 * time.Second))
	return &cdp{ws: ws}, nil
}

func (c *cdp) read() (cdpMessage, error) {
	var m cdpMessage
	if err := websocket.JSON.Receive(c.ws, &m); err != nil {
		return m, fmt.Errorf("read devtools: %w", err)
	}
	if m.Method != "" {
		c.events = append(c.events, m.Method)
		c.noteError(m)
	}
	return m, nil
}

func (c *cdp) noteError(m cdpMessage) {
	switch m.Method {
	case "Runtime.exceptionThrown":
		c.errors = append(c.errors, "exception: "+string(m.Params))
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Type == "error" || p.Type == "assert" {
			c.errors = append(c.errors, "console: "+string(m.Params))
		}
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level string `json:"level"`
			} `json:"entry"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" {
			c.errors = append(c.errors, "log: "+string(m.Params))
		}
	}
}

func (c *cdp) call(session, method string, params any, result any) error {
	c.id++
	msg := map[string]any{"id": c.id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	if err := websocket.JSON.Send(c.ws, msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		m, err := c.read()
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.ID != c.id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	}
}

func (c *cdp) waitEvent(method string) error {
	for _, e := range c.events {
		if e == method {
			return nil
		}
	}
	for {
		m, err := c.read()
		if err != nil {
			return fmt.Errorf("wait for %s: %w", method, err)
		}
		if m.Method == method {
			return nil
		}
	}
}

func TestHTMLSelfContained(t *testing.T) {
	r, err := generateFrom(context.Background(), testConfig(), fleetQuerier(testFleet(), time.Hour), discard())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := render.Render(&b, r, FormatHTML); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", " src=", " href=", "@import", "url("} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("the HTML report contains %q: it must be self-contained and readable without JavaScript", bad)
		}
	}
}

// weekBefore writes, into dir, the JSON report of the test fleet moved a
// week back: a baseline for the test fleet's own week.
func weekBefore(t *testing.T, dir string) string {
	t.Helper()
	r, err := generateFrom(context.Background(), testConfig(), fleetQuerier(testFleet(), time.Hour), discard())
	if err != nil {
		t.Fatal(err)
	}
	week := 7 * 24 * time.Hour
	r.Start, r.End = r.Start.Add(-week), r.End.Add(-week)
	path := filepath.Join(dir, "week-before.json")
	o, err := createOutput(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.write(r, FormatJSON); err != nil {
		t.Fatal(err)
	}
	return path
}
