package domain_test

import (
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/domain"
)

func init() {
	domain.DecodeBody, domain.ParseBody = httpapi.DecodeSubmissions, httpapi.ParseSubmissions
}
