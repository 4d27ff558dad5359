// Package esalert is the Elasticsearch ports.AlertStore (Store), on the
// message store's cluster, client and index prefix; see Store for its layout
// and how it compares and sets.
package esalert
