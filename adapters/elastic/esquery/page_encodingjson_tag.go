//go:build reqlog_encodingjson_replies

package esquery

func init() { encodingJSONReplies = true }
