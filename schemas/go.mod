module github.com/tbhub/tbhub/schemas

go 1.26
