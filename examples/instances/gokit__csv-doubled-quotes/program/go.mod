module example.com/textio

go 1.19
