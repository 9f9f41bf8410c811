module github.com/tbhub/tbhub/services

go 1.26
