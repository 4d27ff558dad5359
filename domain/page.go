package domain

// PageBytes bounds the estimated memory of one page: a store stops filling a page
// once its messages hold this much, so that a page of 100 messages of several
// megabytes each cannot take gigabytes to build and encode. A page still holds
// at least one message, and HasMore tells the reader to go on.
const PageBytes = 4 << 20

// FillPage builds a page from messages in page order: more reports whether
// another message follows, take returns it. The page ends at limit messages or
// once it holds PageBytes; HasMore reports that a message was left. expected, if
// known, is how many messages are at hand, to size the page once.
func FillPage(limit, expected int, more func() bool, take func() (Message, error)) (Page, error) {
	page := Page{Messages: make([]Message, 0, max(min(limit, expected), 0))}
	var bytes int64
	for more() {
		if len(page.Messages) >= limit || bytes >= PageBytes {
			page.HasMore = true
			break
		}
		m, err := take()
		if err != nil {
			return Page{}, err
		}
		page.Messages = append(page.Messages, m)
		bytes += EstimatedBytes(m)
	}
	return page, nil
}

// PageOf is FillPage over items in page order; message turns an item into the
// page's message (a copy, if the store must keep its own).
func PageOf[T any](limit int, items []T, message func(T) Message) Page {
	next := 0
	page, _ := FillPage(limit, len(items), func() bool { return next < len(items) },
		func() (Message, error) { next++; return message(items[next-1]), nil })
	return page
}

// Estimated memory of a message beyond its strings: the struct, header maps and
// slices.
const (
	messageOverhead = 512
	headerOverhead  = 64
	stringOverhead  = 16
)

// EstimatedBytes is the memory m holds, roughly: its strings plus the overhead
// of its struct, maps and slices.
func EstimatedBytes(m Message) int64 {
	n := messageOverhead + len(m.ID) + len(m.Reference) + len(m.Account) + len(m.Domain) + len(m.Name) +
		len(m.IPAddress) + len(m.Method) + len(m.Path)
	for _, c := range []Content{m.Request, m.Response} {
		n += len(c.Body) + len(c.ContentType)
		for name, values := range c.Header {
			n += headerOverhead + len(name)
			for _, v := range values {
				n += len(v) + stringOverhead
			}
		}
	}
	return int64(n)
}
