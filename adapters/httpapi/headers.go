package httpapi

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// maxHeaderBytes is the service's limit on a request's header section as parsed:
// the request line and every field once net/http has trimmed whitespace, merged
// repeated Content-Length and dropped a Host overridden by an absolute URL. Beyond
// it the reply is a JSON 431. The raw bytes are bounded by serverMaxHeaderBytes,
// which net/http enforces itself; between the two, clients get the JSON reply.
const maxHeaderBytes = 64 << 10

// serverMaxHeaderBytes is the outer bound net/http enforces itself (plus its own
// 4 KiB of slack), answering a plain-text 431 before any handler runs.
const serverMaxHeaderBytes = 1 << 20

// limitHeaderBytes answers 431 to a request whose header section is over
// maxHeaderBytes.
func limitHeaderBytes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerBytes(r) > maxHeaderBytes {
			writeError(w, apiError{status: http.StatusRequestHeaderFieldsTooLarge,
				message: fmt.Sprintf("the request headers are larger than the limit of %d bytes", maxHeaderBytes)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// headerBytes is the size of r's request line and header fields as an HTTP/1.1
// client writes them ("Name: value\r\n", the blank line included). net/http moves
// Host and Transfer-Encoding out of the header map, so they are counted apart.
func headerBytes(r *http.Request) int {
	const fieldOverhead = len(": \r\n")
	n := len(r.Method) + len(" ") + len(r.RequestURI) + len(" ") + len(r.Proto) + len("\r\n")
	if r.Host != "" {
		n += len("Host") + fieldOverhead + len(r.Host)
	}
	for _, coding := range r.TransferEncoding {
		n += len("Transfer-Encoding") + fieldOverhead + len(coding)
	}
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + fieldOverhead + len(v)
		}
	}
	return n + len("\r\n")
}

// requireJSON answers 415 unless the request declares a body this service reads:
// application/json, in UTF-8 (RFC 8259: JSON is UTF-8; "utf8" is a common
// spelling of it), without a content coding.
// It looks only at headers, so it runs before the body is read.
func requireJSON(w http.ResponseWriter, r *http.Request) bool {
	mediaType, charset := parseContentType(r.Header.Get("Content-Type"))
	var refusal, acceptEncoding string
	switch {
	case mediaType != "application/json":
		refusal = "the request body must be JSON: send Content-Type: application/json"
	case charset != "" && !strings.EqualFold(charset, "utf-8") && !strings.EqualFold(charset, "utf8"):
		refusal = fmt.Sprintf("charset %s is not supported: JSON must be UTF-8; send Content-Type: application/json "+
			"without a charset or with charset=utf-8", charset)
	default:
		coding := unsupportedContentCoding(r.Header)
		if coding == "" {
			return true
		}
		refusal = fmt.Sprintf("Content-Encoding %s is not supported; send the body uncompressed", coding)
		// RFC 9110 §12.5.3: Accept-Encoding tells a coding problem from a media type one.
		acceptEncoding = "identity"
	}
	accepted := http.Header{"Accept-Post": {"application/json"}}
	if acceptEncoding != "" {
		accepted["Accept-Encoding"] = []string{acceptEncoding}
	}
	writeError(w, apiError{status: http.StatusUnsupportedMediaType, message: refusal, header: accepted})
	return false
}

// parseContentType returns the lower-case media type and the charset parameter
// ("" when absent) of a Content-Type value. mime.ParseMediaType drops every
// parameter when one is malformed ("application/json; charset=latin1; x"), so
// the charset is then looked for by hand rather than assumed absent.
func parseContentType(value string) (mediaType, charset string) {
	switch value { // what nearly every client sends, without a parameter map
	case "application/json":
		return value, ""
	case "application/json; charset=utf-8":
		return "application/json", "utf-8"
	}
	mediaType, params, err := mime.ParseMediaType(value)
	switch {
	case err == nil:
		return mediaType, params["charset"]
	case !errors.Is(err, mime.ErrInvalidMediaParameter):
		return "", ""
	}
	_, rawParams, _ := strings.Cut(value, ";")
	for param := range strings.SplitSeq(rawParams, ";") {
		name, v, _ := strings.Cut(param, "=")
		if strings.EqualFold(strings.TrimSpace(name), "charset") {
			return mediaType, strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return mediaType, ""
}

// unsupportedContentCoding returns the first content coding of the request other
// than identity, "" when the body is sent as is.
func unsupportedContentCoding(h http.Header) string {
	for _, value := range h.Values("Content-Encoding") {
		for coding := range strings.SplitSeq(value, ",") {
			coding = strings.TrimSpace(coding)
			if coding != "" && !strings.EqualFold(coding, "identity") {
				return coding
			}
		}
	}
	return ""
}
