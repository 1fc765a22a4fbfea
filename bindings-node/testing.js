// `require('zkrecipes/testing')`: the testing kit (lib/testing.js).
'use strict';

module.exports = require('./lib/testing');
