module github.com/tbhub/tbhub/uploader

go 1.26
