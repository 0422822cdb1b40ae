module ssebench

go 1.22
