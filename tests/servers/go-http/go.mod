module strain.test/go-http

go 1.24
