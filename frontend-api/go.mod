module github.com/tbhub/tbhub/frontend-api

go 1.26
