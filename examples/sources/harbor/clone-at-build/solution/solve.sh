#!/bin/bash
sed -i 's/text.split(",")/[p for p in text.split(",") if p]/' widgets.py
